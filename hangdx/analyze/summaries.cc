#include "hangdx/analyze/summaries.h"

#include <algorithm>
#include <set>
#include <unordered_set>
#include <vector>

namespace hangdx::analyze {

using model::Rank;

namespace {

void PgSummaries(const RankAnalysis& a, Diagnosis* out) {
  size_t first = out->pgs.size();
  for (int gi = 0; gi < a.groups.size(); ++gi) {
    const Group& g = a.groups[gi];
    PgSummary s;
    s.name = g.name;
    s.desc = g.desc;
    s.ranks = g.members;
    s.ranks_inferred = g.inferred;
    s.max_seq = a.instances.max_seq[gi];
    s.mismatched_seqs = a.instances.mismatched_seqs[gi];
    out->pgs.push_back(std::move(s));
  }
  // Every kept instance is a problem or pending: the first one of a pg is
  // where it is stuck.
  for (const auto& in : a.instances.list) {
    PgSummary& s = out->pgs[first + in.group];
    if (s.stuck_seq < 0) {
      s.stuck_seq = in.seq;
      s.stuck_op = a.LeadOp(in).op;
    }
  }
}

RankSummary RankSummaryOf(const RankAnalysis& a, Rank r) {
  RankSummary s;
  s.rank = r;
  const model::RankDump* d = a.job.Find(r);
  if (!d) {
    s.state = "no dump";
    return s;
  }
  s.file = d->file;
  for (auto it = d->ops.rbegin(); it != d->ops.rend(); ++it)
    if (it->completed) {
      s.last_completed = a.LabelOf(r, *it);
      break;
    }
  s.last_activity_ns = std::max(s.last_activity_ns, a.History(*d).last_activity_ns());
  int b = a.graph.Blocking(r);
  RankNodeType type = a.graph.node(b).type;
  if (type == RankNodeType::kNoDump) {
    s.state = "crashed";
    s.current = "its log reports a crash";
  } else if (type == RankNodeType::kIdle) {
    s.state = d->ops.empty() && !d->wait ? "no ops" : "idle";
    s.current = d->ops.empty() ? (d->wait ? d->wait->current_op : "") : "after " + a.LabelOf(r, d->ops.back());
  } else {
    s.state = a.graph.dead(b) ? "deadlocked" : "blocked";
    s.current = a.NodeLabel(b);
  }
  return s;
}

// True when `e` goes from a collective to a rank that may be one of its
// pg's members no record shows (RankGraph::UnseenMembers): an OR wait on
// a candidate, drawn as one wait among others.
bool MayWait(const RankAnalysis& a, const RankGraphEdge& e) {
  const RankNode& n = a.graph.node(e.from);
  if (n.type != RankNodeType::kInstance) return false;
  const std::vector<Rank>* unseen = a.graph.UnseenMembers(n.instance);
  return unseen != nullptr && unseen->size() > 1 && std::binary_search(unseen->begin(), unseen->end(), e.via);
}

void RankEdges(const RankAnalysis& a, Diagnosis* out) {
  std::set<std::pair<int, int>> cyc_edges;
  for (const auto& comp : a.graph.components())
    for (int v : comp)
      for (int w : a.graph.successors(v))
        if (std::binary_search(comp.begin(), comp.end(), w)) cyc_edges.insert({v, w});
  // (waiter, via) pairs already listed, packed: ranks are below
  // model::kMaxRank (2^24). A hash set, not a tree: one pair per wait of a
  // 100,000-rank snapshot.
  std::unordered_set<uint64_t> seen;
  seen.reserve(a.graph.edges().size());
  // A node's edges come one after another (a rank's wait lists its ranks
  // together): its label is made once for them.
  int labelled = -1;
  std::string label;
  for (const auto& e : a.graph.edges()) {
    if (e.via < 0) continue;
    for (Rank w : a.Waiters(e.from)) {
      if (w == e.via || !seen.insert(static_cast<uint64_t>(w) << 32 | static_cast<uint64_t>(e.via)).second) continue;
      if (e.from != labelled) {
        label = a.NodeLabel(e.from);
        labelled = e.from;
      }
      out->edges.push_back({w, e.via, MayWait(a, e) ? label + ", if a member" : label, cyc_edges.count({e.from, e.to}) > 0});
    }
  }
}

}  // namespace

void WriteSummaries(const RankAnalysis& a, Diagnosis* out) {
  PgSummaries(a, out);
  // Both lists are ascending (dumps by rank, without_dump by definition):
  // merged, not put in a set.
  std::vector<Rank> ranks;
  ranks.reserve(a.job.dumps.size() + a.world.without_dump.size());
  for (const auto& d : a.job.dumps) ranks.push_back(d.rank);
  size_t with_dump = ranks.size();
  ranks.insert(ranks.end(), a.world.without_dump.begin(), a.world.without_dump.end());
  std::inplace_merge(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(with_dump), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  out->ranks.reserve(out->ranks.size() + ranks.size());
  for (Rank r : ranks) out->ranks.push_back(RankSummaryOf(a, r));
  RankEdges(a, out);
}

}  // namespace hangdx::analyze
