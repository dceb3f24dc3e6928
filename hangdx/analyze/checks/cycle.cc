#include "hangdx/analyze/checks/cycle.h"

#include <algorithm>
#include <map>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// What the nodes of a witness cycle are.
struct CycleShape {
  std::vector<Rank> order;       // ranks in wait order, the smallest first
  std::set<int> groups;          // pgs of its instance and P2P nodes
  std::vector<std::string> ops;  // NodeLabel per node
  Kind kind = Kind::kWaitCycle;
};

// True when every wait state on the cycle is in a send or a recv.
bool SnapshotsAreP2p(const RankAnalysis& a, const std::vector<int>& cyc) {
  for (int v : cyc) {
    const std::string& op = a.job.Find(a.graph.node(v).rank)->wait->current_op;
    if (op.find("send") == std::string::npos && op.find("recv") == std::string::npos) return false;
  }
  return true;
}

CycleShape ShapeOf(const RankAnalysis& a, const std::vector<int>& cyc) {
  CycleShape s;
  bool all_p2p = true, all_coll = true, all_snapshot = true;
  for (size_t i = 0; i < cyc.size(); ++i) {
    int from = cyc[i], to = cyc[(i + 1) % cyc.size()];
    // Ranks in wait order: the rank each edge of the cycle goes through.
    Rank via = a.graph.Via(from, to);
    if (via >= 0) s.order.push_back(via);
    const RankNode& n = a.graph.node(from);
    all_p2p = all_p2p && n.type == RankNodeType::kP2P;
    all_coll = all_coll && n.type == RankNodeType::kInstance;
    all_snapshot = all_snapshot && n.type == RankNodeType::kSnapshot;
    if (n.group >= 0) s.groups.insert(n.group);
    s.ops.push_back(a.NodeLabel(from));
  }
  // The waiter of the first node comes first: rotate so the smallest rank leads.
  if (!s.order.empty()) {
    std::rotate(s.order.begin(), s.order.end() - 1, s.order.end());
    auto mn = std::min_element(s.order.begin(), s.order.end());
    std::rotate(s.order.begin(), mn, s.order.end());
  }
  if (all_snapshot) all_p2p = SnapshotsAreP2p(a, cyc);
  s.kind = all_p2p ? Kind::kP2pCycle : (all_coll && s.groups.size() >= 2) ? Kind::kOrderInversion : Kind::kWaitCycle;
  return s;
}

// The cycle in words: "rank 0 in <op> waits for rank 1; ...". No rank on
// an edge: the op is queued behind an earlier unfinished op of its own pg
// (one stream), not waiting for a peer.
std::string Chain(const RankAnalysis& a, const std::vector<int>& cyc, const std::vector<std::string>& ops) {
  std::string chain;
  for (size_t i = 0; i < cyc.size(); ++i) {
    std::vector<Rank> w = a.Waiters(cyc[i]);
    Rank via = a.graph.Via(cyc[i], cyc[(i + 1) % cyc.size()]);
    chain += (i ? "; " : "") + RankWords(w) + " in " + ops[i] + " " +
             (via >= 0 ? std::string(Verb(w, "waits", "wait")) + " for rank " + std::to_string(via)
                       : std::string(Verb(w, "is", "are")) + " queued behind " + ops[(i + 1) % ops.size()]);
  }
  return chain;
}

// The records of every op on the cycle; the pg of the first instance.
void AddCycleEvidence(const RankAnalysis& a, const std::vector<int>& cyc, Finding* f) {
  for (int v : cyc) {
    const RankNode& n = a.graph.node(v);
    if (n.type == RankNodeType::kInstance) {
      const Instance& in = a.instances.list[n.instance];
      if (f->pg_name.empty()) FillPg(a, in, f);
      for (size_t i = 0; i < in.arrived.size(); ++i)
        AddOpEvidence(a, f, in.arrived[i], a.DumpOf(in, in.arrived[i])->ops[in.ops(i).front()],
                      "blocked in " + a.NodeLabel(v));
    } else if (n.type == RankNodeType::kP2P) {
      AddOpEvidence(a, f, n.rank, a.job.Find(n.rank)->ops[n.op], "blocked in " + a.NodeLabel(v));
    } else if (n.type == RankNodeType::kSnapshot) {
      f->evidence.push_back({a.job.Find(n.rank)->file, n.rank, -1, "waits in " + a.NodeLabel(v)});
    }
  }
}

// Across pgs, the ranks on the minority side of the disagreement: every
// collective node of the component, its waiters counted per pg; when one
// pg holds strictly the most waiters (the order most ranks issued), the
// waiters of the other pgs issued theirs in a different order and are the
// culprits. Empty on a tie, or with fewer than two pgs.
std::vector<Rank> MinoritySide(const RankAnalysis& a, const std::vector<int>& comp) {
  std::map<int, std::vector<Rank>> by_group;
  for (int v : comp) {
    const RankNode& n = a.graph.node(v);
    if (n.type != RankNodeType::kInstance || n.group < 0) continue;
    std::vector<Rank> w = a.Waiters(v);
    by_group[n.group].insert(by_group[n.group].end(), w.begin(), w.end());
  }
  if (by_group.size() < 2) return {};
  // Only a rank in every one of those pgs issued them in some order: the
  // other waiters (ranks 0-1 of a world of 4 in the default pg, beside the
  // sub-pg of ranks 2-3) agree with nobody, and counting them made the rank
  // that kept the program's order (rank 2, in its sub-pg's seq 2 while rank
  // 3 skipped it) the minority.
  std::set<Rank> shared;
  bool first = true;
  for (const auto& [g, w] : by_group) {
    const std::vector<Rank>& m = a.groups[g].members;
    std::set<Rank> in(m.begin(), m.end());
    if (first) shared = in;
    for (auto it = shared.begin(); it != shared.end();) it = in.count(*it) ? std::next(it) : shared.erase(it);
    first = false;
  }
  if (!shared.empty())
    for (auto& [g, w] : by_group)
      w.erase(std::remove_if(w.begin(), w.end(), [&](Rank r) { return !shared.count(r); }), w.end());
  size_t most = 0, ties = 0;
  for (const auto& [g, w] : by_group) {
    if (w.size() > most) most = w.size(), ties = 0;
    if (w.size() == most) ++ties;
  }
  if (ties > 1) return {};
  std::vector<Rank> out;
  for (const auto& [g, w] : by_group)
    if (w.size() != most) out.insert(out.end(), w.begin(), w.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// For each collective of `cyc` whose pg has members no record shows
// (RankGraph::UnseenMembers): why it is taken to wait for the ranks that
// can be those members, and which ranks cannot be. `open`: the cycle is
// not named (OpenCycle), so no "cycle shown".
void AddUnseenMemberDetails(const RankAnalysis& a, const std::vector<int>& cyc, bool open, Finding* f) {
  for (int v : cyc) {
    const RankNode& n = a.graph.node(v);
    if (n.type != RankNodeType::kInstance) continue;
    const std::vector<Rank>* unseen = a.graph.UnseenMembers(n.instance);
    if (!unseen) continue;
    const Instance& in = a.instances.list[n.instance];
    const Group& g = a.groups[in.group];
    std::string why = g.members.size() == 1 ? ": a collective of one rank cannot wait, so"
                      : a.graph.UnseenIsReading(n.instance)
                          ? ", all of them in seq " + std::to_string(in.seq) +
                                ": it would have finished if they were all its members, so, unless it is merely "
                                "slow,"
                          : ", a record says it has " + std::to_string(g.size) + " members:";
    std::string d = g.Label() + "'s members are not recorded and only " + RankWords(g.members) + " " +
                    Verb(g.members, "records", "record") + " it" + why + " it has members that left no record of it: " +
                    (unseen->size() == 1 ? RankWords(*unseen) + ", blocked elsewhere"
                                         : "among " + RankWords(*unseen) + ", each blocked elsewhere") +
                    ": it cannot finish";
    std::vector<Rank> excluded;
    for (Rank r = 0; r < a.world.size; ++r)
      if (g.MemberIndex(r) < 0 && !std::binary_search(unseen->begin(), unseen->end(), r)) excluded.push_back(r);
    if (!excluded.empty())
      d += "; not " + RankWords(excluded) + ", whose dump lists the world in gloo's pg_config '' (a rank that " +
           "created the backend of a new_group lists none there): in no sub-group";
    if (unseen->size() > 1)
      d += open ? "; which of them is not known" : "; which of them is not known: the cycle shown is one that they allow";
    f->details.push_back(d);
  }
}

// One cycle of component `comp`: among the collectives waiting for their
// pgs' unrecorded members when they form one (ranks each blocked in a pg
// that only they record, waiting for one another: the likeliest reading
// when those members could also be a rank whose wait is explained
// otherwise), else WaitGraph::WitnessCycle of the whole component.
std::vector<int> Witness(const RankAnalysis& a, const std::vector<int>& comp) {
  std::vector<int> unseen;
  for (int v : comp) {
    const RankNode& n = a.graph.node(v);
    if (n.type == RankNodeType::kInstance && a.graph.UnseenMembers(n.instance)) unseen.push_back(v);
  }
  if (unseen.size() >= 2 && unseen.size() < comp.size()) {
    std::vector<int> cyc = a.graph.graph().WitnessCycle(unseen);
    if (cyc.size() >= 2) return cyc;
  }
  return a.graph.graph().WitnessCycle(comp);
}

// The collectives of `comp` that wait for unrecorded members of their pg
// that could be any of several ranks (RankGraph::UnseenMembers).
std::vector<int> OpenMemberNodes(const RankAnalysis& a, const std::vector<int>& comp) {
  std::vector<int> out;
  for (int v : comp) {
    const RankNode& n = a.graph.node(v);
    if (n.type != RankNodeType::kInstance) continue;
    const std::vector<Rank>* unseen = a.graph.UnseenMembers(n.instance);
    if (unseen && unseen->size() > 1) out.push_back(v);
  }
  return out;
}

// The nodes to report when the cycle cannot be named: `cyc` goes through a
// collective whose pg's members are not known, and another such collective
// of the component is off it (gloo sub-groups gA=[0,1], gB=[1,2], gC=[0,2]
// each recorded by one rank: 0 -> 1 -> 0 and 0 -> 1 -> 2 -> 0 are both
// allowed, and calling rank 2 a bystander of the first is a guess). Then
// every rank blocked in those collectives is in the deadlock, whichever the
// members are: each waits only for ranks blocked in another of them.
// Returns the cycle's nodes and those collectives, in node order; empty
// when the cycle stands.
std::vector<int> OpenCycle(const RankAnalysis& a, const std::vector<int>& comp, const std::vector<int>& cyc) {
  std::vector<int> open = OpenMemberNodes(a, comp);
  auto on_cycle = [&](int v) { return std::find(cyc.begin(), cyc.end(), v) != cyc.end(); };
  if (std::none_of(open.begin(), open.end(), on_cycle) || std::all_of(open.begin(), open.end(), on_cycle))
    return {};
  std::vector<int> out = cyc;
  out.insert(out.end(), open.begin(), open.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// "rank 0 in pg 1 seq 1 all_reduce, rank 1 in pg 2 seq 1 all_reduce and ...".
std::string Blocked(const RankAnalysis& a, const std::vector<int>& nodes) {
  std::string s;
  for (size_t i = 0; i < nodes.size(); ++i)
    s += std::string(i == 0 ? "" : i + 1 == nodes.size() ? " and " : ", ") + RankWords(a.Waiters(nodes[i])) + " in " +
         a.NodeLabel(nodes[i]);
  return s;
}

Finding CycleFinding(const RankAnalysis& a, const std::vector<int>& comp) {
  std::vector<int> cyc = Witness(a, comp);
  CycleShape shape = ShapeOf(a, cyc);
  std::vector<int> open = OpenCycle(a, comp, cyc);
  Finding f;
  f.kind = shape.kind;
  f.cycle = shape.order;
  f.culprit_ranks = shape.order;
  for (int v : open) {
    std::vector<Rank> w = a.Waiters(v);
    f.culprit_ranks.insert(f.culprit_ranks.end(), w.begin(), w.end());
  }
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  f.culprit_ranks.erase(std::unique(f.culprit_ranks.begin(), f.culprit_ranks.end()), f.culprit_ranks.end());
  if (!open.empty()) {
    f.cycle.clear();  // which cycle it is depends on members no record shows
    f.roles.push_back({"blocked in a pg whose other members are not recorded", f.culprit_ranks});
  }
  bool undecided_side = false;
  if (f.kind == Kind::kOrderInversion && open.empty()) {
    std::vector<Rank> minority = MinoritySide(a, comp);
    if (!minority.empty()) {
      f.culprit_ranks = minority;
      f.roles.push_back({"issued the pgs in the minority order", minority});
    } else {
      // As many ranks wait in each pg (two ranks, one order each): no
      // majority says which order the program meant.
      f.roles.push_back({"issued the pgs in different orders (which order is the odd one is undecided)",
                         f.culprit_ranks});
      undecided_side = true;
    }
  }
  f.severity = Severity::kError;
  f.hang = true;
  const std::vector<std::string>& ops = shape.ops;
  std::string chain = Chain(a, cyc, ops);
  f.op = ops.empty() ? "" : ops.front();
  for (size_t i = 1; i < ops.size(); ++i) f.op += " / " + ops[i];
  std::string cycle_text;
  for (Rank r : shape.order) cycle_text += std::to_string(r) + " -> ";
  if (!shape.order.empty()) cycle_text += std::to_string(shape.order.front());
  const char* what = f.kind == Kind::kP2pCycle ? "circular wait between P2P operations"
                     : f.kind == Kind::kOrderInversion
                         ? "circular wait across process groups issued in different orders"
                         : "circular wait";
  if (open.empty()) {
    f.summary = std::string(what) + ": " + cycle_text;
    if (cyc.size() <= 4) f.summary += " (" + chain + ")";
    f.details.push_back(chain);
  } else {
    f.summary = std::string(what) + " among " + RankWords(f.culprit_ranks) + ": " + Blocked(a, open) +
                ", each waiting for members of its pg that no record shows, and every rank that can be one is "
                "blocked in another of them; which cycle they form is not known";
    f.details.push_back("the cycles those members allow include " + cycle_text + " (" + chain +
                        "); the pgs' ranks in the program (its new_group calls) tell which");
  }
  if (undecided_side)
    f.details.push_back("as many ranks wait in each pg of the cycle: which of " + RankWords(f.culprit_ranks) +
                        " issued the pgs in the odd order cannot be told from these ranks; look at each");
  const std::vector<int>& reported = open.empty() ? cyc : open;
  AddUnseenMemberDetails(a, reported, !open.empty(), &f);
  AddCycleEvidence(a, reported, &f);
  if (shape.groups.size() >= 2) f.pg_name.clear(), f.seq = -1;
  f.fix_hint = f.kind == Kind::kP2pCycle
                   ? "order sends and receives by rank parity (even ranks send first), or use batch_isend_irecv"
               : f.kind == Kind::kOrderInversion
                   ? "issue the operations of all process groups in one consistent order on every rank"
                   : "break the cycle: make every rank acquire what it waits for in one global order";
  return f;
}

}  // namespace

void CycleCheck(const RankAnalysis& a, FindingSink* sink) {
  const auto& comps = a.graph.components();
  for (size_t c = 0; c < comps.size(); ++c) sink->Add(CycleFinding(a, comps[c]), static_cast<int>(c));
}

}  // namespace hangdx::analyze
