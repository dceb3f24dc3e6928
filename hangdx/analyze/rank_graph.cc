#include "hangdx/analyze/rank_graph.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <string>

namespace hangdx::analyze {

using model::OpRecord;
using model::Rank;
using model::RankDump;

namespace {
uint64_t EdgeKey(int from, int to) { return (static_cast<uint64_t>(from) << 32) | static_cast<uint32_t>(to); }
}  // namespace

// Fills a RankGraph: nodes first (so that blocking nodes can be found),
// edges second, then the reduction.

class RankGraphBuilder {
 public:
  RankGraphBuilder(const model::Job& job, const World& world, const GroupTable& groups,
                   const InstanceTable& instances, RankGraph* g)
      : job_(job), world_(world), groups_(groups), instances_(instances), g_(*g) {
    // Per-rank lookups go through arrays indexed by rank for ranks below
    // the highest with a dump (bounded, so that a few far ranks cost no
    // memory): a tree lookup per wait was most of the graph's build for a
    // 100,000-rank snapshot.
    if (!job.dumps.empty() && job.dumps.back().rank >= 0) {
      size_t n = static_cast<size_t>(job.dumps.back().rank) + 1;
      if (n <= 4 * job.dumps.size() + 1024) dense_ = n;
    }
    blocking_of_.assign(dense_, -1);
    snapshot_of_.assign(dense_, -1);
    sink_of_dense_.assign(dense_, -1);
  }

  void Run() {
    MakeNodes();
    InstanceEdges();
    for (const auto& [key, node] : p2p_node_) P2PEdges(key.first, key.second, node);
    SnapshotEdges();
    // Every rank with a dump gets its blocking node now, so that the graph
    // is complete before it is reduced (a sink made now has no edges).
    for (const auto& d : job_.dumps) BlockingNode(d.rank);
    g_.blocking_dense_ = std::move(blocking_of_);
    AddEdgesSorted();
    g_.dead_ = g_.graph_.Deadlocked();
    g_.components_ = g_.graph_.CyclicComponents(g_.dead_);
  }

 private:
  int NewNode(WaitGraph::NodeKind kind, RankNode info) {
    int n = g_.graph_.AddNode(kind);
    g_.nodes_.push_back(info);
    return n;
  }

  // Records the edge; the WaitGraph gets them all at the end, each node's
  // in ascending order (AddEdge keeps successors sorted: out-of-order adds
  // would cost O(degree) each, quadratic for a rank waiting on thousands).
  void Edge(int from, int to, Rank via) { g_.edges_.push_back({from, to, via}); }

  // Adds the distinct edges to the WaitGraph and keeps, per (from, to), the
  // via of the first edge added (the stable sort keeps edges' order).
  void AddEdgesSorted() {
    auto& via = g_.via_;
    via.reserve(g_.edges_.size());
    for (const auto& e : g_.edges_) via.emplace_back(EdgeKey(e.from, e.to), e.via);
    std::stable_sort(via.begin(), via.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    via.erase(std::unique(via.begin(), via.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
              via.end());
    for (const auto& [k, v] : via) g_.graph_.AddEdge(static_cast<int>(k >> 32), static_cast<int>(k & 0xffffffffu));
  }

  void MakeNodes() {
    const auto& list = instances_.list;
    g_.instance_node_.assign(list.size(), -1);
    g_.behind_.assign(list.size(), -1);
    std::set<int> earlier_problem;  // groups with an unfinished problem instance so far
    std::vector<std::vector<Rank>> unseen(list.size());
    std::vector<int> open;  // first unfinished instances of their pg, ascending
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Instance& in = list[i];
      if (!in.problem() && !in.any_pending) continue;
      // Queued behind an earlier problem of its pg, it waits for that one
      // too (an AND): only the first unfinished instance of a pg gets the
      // OR wait for its unrecorded members.
      if (!earlier_problem.count(in.group)) {
        unseen[i] = UnseenCandidates(in);
        open.push_back(i);
      }
      if (in.problem() && in.any_pending) earlier_problem.insert(in.group);
    }
    PossiblyUnseen(open, &unseen);
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Instance& in = list[i];
      if (!in.problem() && !in.any_pending) continue;
      bool any = !unseen[i].empty();
      if (any) g_.unseen_[i] = std::move(unseen[i]);
      g_.instance_node_[i] = NewNode(any ? WaitGraph::NodeKind::kOr : WaitGraph::NodeKind::kAnd,
                                     {RankNodeType::kInstance, -1, i, in.group});
    }
    for (int gi = 0; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      for (size_t m = 0; m < g.members.size(); ++m)
        for (uint32_t idx : g.p2p[m])
          if (!g.dump[m]->ops[idx].completed)
            p2p_node_[{g.members[m], idx}] =
                NewNode(WaitGraph::NodeKind::kAnd, {RankNodeType::kP2P, g.members[m], -1, gi, idx});
    }
    // A wait on pg-local ranks (global ranks unknown) still blocks its rank;
    // it gets no edges.
    for (const auto& d : job_.dumps)
      if (d.wait && !d.wait->waiting_for.empty()) {
        int n = NewNode(d.wait->any_of ? WaitGraph::NodeKind::kOr : WaitGraph::NodeKind::kAnd,
                        {RankNodeType::kSnapshot, d.rank});
        g_.snapshot_node_.emplace_back(d.rank, n);  // dumps come by rank
        if (Dense(d.rank)) snapshot_of_[static_cast<size_t>(d.rank)] = n;
      }
  }

  void InstanceEdges() {
    // A pg's ops run in order on one stream (NCCL): a seq queued after an
    // earlier problem seq that has not finished cannot finish either, so it
    // is a consequence of that one, not a root of its own. (gloo runs them
    // synchronously and ends a failed op: there the earlier problem is
    // finished and blocks nothing.)
    const auto& list = instances_.list;
    std::map<int, int> unfinished_problem;  // group -> instance
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Instance& in = list[i];
      if (g_.instance_node_[i] < 0) continue;
      auto it = unfinished_problem.find(in.group);
      if (it != unfinished_problem.end()) {
        g_.behind_[i] = it->second;
        Edge(g_.instance_node_[i], g_.instance_node_[it->second], -1);
      } else if (in.problem() && in.any_pending) {
        unfinished_problem[in.group] = i;
      }
    }
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      int node = g_.instance_node_[i];
      if (node < 0) continue;
      for (Rank r : list[i].not_reached) Edge(node, BlockingNode(r), r);
      for (Rank r : list[i].no_dump) Edge(node, SinkFor(r), r);
      if (auto it = g_.unseen_.find(i); it != g_.unseen_.end())
        for (Rank r : it->second) Edge(node, job_.Find(r) ? BlockingNode(r) : SinkFor(r), r);
    }
  }

  // At most this many candidates are listed for an OR wait on unrecorded
  // members: past it the list says nothing a user can act on, and a wait
  // per instance on most of a 100,000-rank world would make the graph
  // quadratic. Such an instance gets no OR wait.
  static constexpr size_t kMaxUnseen = 64;

  // The ranks that can be the members of `in`'s pg that left no record of
  // it, when it certainly has some and every recorded one is in it, pending
  // (neither completed nor retired: a retired gloo op failed, and its rank
  // is no longer in it); empty otherwise, and when there are more than
  // kMaxUnseen. Certainly: one rank's collective cannot wait, and a record
  // may give the pg's size (Group::size). The world may be inferred from
  // the files: a rank below the highest given exists, and one that left no
  // file is a sink (the pg may finish); ranks above it are not known, so
  // the files stand for the world (a 2-rank job whose gloo sub-groups blank
  // pg_config), and the report says the world size was inferred.
  std::vector<Rank> UnseenCandidates(const Instance& in, bool need_certain = true) {
    const Group& g = groups_[in.group];
    bool certain = g.members.size() == 1 || g.size > static_cast<int64_t>(g.members.size());
    if (!g.inferred || (need_certain && !certain) || in.problem() || !AllPending(in, g)) return {};
    // With the world inferred, only gloo's Flight Recorder pgs, whose
    // sub-group members are blanked (pg_config '[]'): a log's pg of unknown
    // members is a communicator whose Init line is missing, and its other
    // members recorded it under another name (cli_test nccl_no_init_line).
    if (world_.inferred)
      for (const RankDump* d : g.dump)
        if (!d || !d->from_flight_recorder) return {};
    const std::vector<Rank>& world = SubGroupCandidates();
    if (world.size() > kMaxUnseen + g.members.size()) return {};
    std::vector<Rank> out;
    for (Rank r : world)
      if (g.MemberIndex(r) < 0) out.push_back(r);
    if (out.size() > kMaxUnseen) return {};
    return out;
  }

  // An instance whose recorded members (two or more) are all in it, pending,
  // may have members that left no record: its pg's members are not recorded
  // (gloo), and it would have finished without one, unless it is merely
  // slow. That wait is taken (an OR on the ranks that can be those members,
  // with *unseen) only where it closes a cycle with an instance that
  // certainly has one (UnseenCandidates): that one's members are among this
  // one's candidates and its candidates among this one's members. Two
  // sub-groups first used in opposite orders (ranks 0-1 in pg 1, rank 2
  // alone in pg 2: the fresh-user tester's inv3) are then the deadlock
  // they are, not two undecided pgs; a pair of pgs neither of which
  // certainly waits (data-parallel pairs caught mid-collective) takes none.
  void PossiblyUnseen(const std::vector<int>& open, std::vector<std::vector<Rank>>* unseen) {
    const auto& list = instances_.list;
    std::vector<std::pair<int, std::vector<Rank>>> found;
    for (int i : open) {
      if (!(*unseen)[i].empty() || groups_[list[i].group].members.size() < 2) continue;
      std::vector<Rank> cand = UnseenCandidates(list[i], false);
      if (cand.empty()) continue;
      const Group& gi = groups_[list[i].group];
      for (int j : open) {
        const std::vector<Rank>& cj = (*unseen)[j];
        if (j == i || cj.empty() || list[j].group == list[i].group) continue;
        const Group& gj = groups_[list[j].group];
        // One user-described pg under two names is new_group called in
        // different orders: the pg-creation-order check tells that story.
        if (gi.desc == gj.desc && UserDescription(gi.desc)) continue;
        bool members_in = std::all_of(gj.members.begin(), gj.members.end(),
                                      [&](Rank r) { return std::binary_search(cand.begin(), cand.end(), r); });
        bool waits_back = std::any_of(cj.begin(), cj.end(), [&](Rank r) { return gi.MemberIndex(r) >= 0; });
        if (members_in && waits_back) {
          found.emplace_back(i, std::move(cand));
          break;
        }
      }
    }
    for (auto& [i, cand] : found) {
      (*unseen)[i] = std::move(cand);
      g_.unseen_reading_.insert(i);
    }
  }

  // The ranks of the world that can be in a sub-group, ascending: all but
  // those whose dump shows them in none (GroupTable::InNoSubGroup); with no
  // world size at all, the ranks given. Computed once, on first use: it is
  // the same for every instance.
  const std::vector<Rank>& SubGroupCandidates() {
    if (sub_candidates_) return *sub_candidates_;
    sub_candidates_.emplace();
    if (world_.size <= 0) {
      for (const auto& d : job_.dumps)
        if (d.rank >= 0 && (sub_candidates_->empty() || sub_candidates_->back() != d.rank))
          sub_candidates_->push_back(d.rank);
      return *sub_candidates_;
    }
    for (Rank r = 0; r < world_.size; ++r) {
      const RankDump* d = job_.Find(r);
      if (d && groups_.InNoSubGroup(*d, world_.size)) continue;
      sub_candidates_->push_back(r);
    }
    return *sub_candidates_;
  }

  // True when every recorded member of g reached `in` and its op there is
  // neither completed nor retired (a retired gloo op failed: its rank is no
  // longer in it).
  bool AllPending(const Instance& in, const Group& g) const {
    if (in.arrived.size() != g.members.size()) return false;
    for (size_t k = 0; k < in.arrived.size(); ++k)
      for (uint32_t idx : in.ops(k)) {
        const OpRecord& op = g.DumpOf(in.arrived[k])->ops[idx];
        if (op.completed || op.retired) return false;
      }
    return true;
  }

  void SnapshotEdges() {
    for (const auto& [rank, node] : g_.snapshot_node_) {
      if (job_.Find(rank)->wait->pg_local) continue;
      for (Rank w : job_.Find(rank)->wait->waiting_for) {
        const RankDump* d = job_.Find(w);
        Edge(node, d ? BlockingNode(w) : SinkFor(w), w);
      }
    }
  }

  int SinkFor(Rank r) {
    if (Dense(r) && sink_of_dense_[static_cast<size_t>(r)] >= 0) return sink_of_dense_[static_cast<size_t>(r)];
    auto it = sink_of_.find(r);
    if (it != sink_of_.end()) return it->second;
    bool has = job_.Find(r) != nullptr && !Crashed(job_, r);
    int n = NewNode(WaitGraph::NodeKind::kSink, {has ? RankNodeType::kIdle : RankNodeType::kNoDump, r});
    if (Dense(r))
      sink_of_dense_[static_cast<size_t>(r)] = n;
    else
      sink_of_[r] = n;
    return n;
  }

  bool Dense(Rank r) const { return r >= 0 && static_cast<size_t>(r) < dense_; }

  // The node where rank r is blocked now: its last recorded op if that op is
  // stuck, else its live wait state, else a sink (busy elsewhere / no data).
  int BlockingNode(Rank r) {
    if (Dense(r)) {
      if (blocking_of_[static_cast<size_t>(r)] >= 0) return blocking_of_[static_cast<size_t>(r)];
    } else if (auto it = g_.blocking_.find(r); it != g_.blocking_.end()) {
      return it->second;
    }
    int n = Crashed(job_, r) ? SinkFor(r) : LastOpNode(r);
    const RankDump* d = job_.Find(r);
    if (n < 0 && d && d->wait) {
      if (Dense(r)) {
        n = snapshot_of_[static_cast<size_t>(r)];
      } else {
        const auto& s = g_.snapshot_node_;
        auto it = std::lower_bound(s.begin(), s.end(), std::pair<Rank, int>{r, INT_MIN});
        if (it != s.end() && it->first == r) n = it->second;
      }
    }
    if (n < 0) n = SinkFor(r);
    if (Dense(r))
      blocking_of_[static_cast<size_t>(r)] = n;  // the graph's array at the end
    else
      g_.blocking_[r] = n;
    return n;
  }

  // The node of rank r's last recorded op, -1 when that op has none (it
  // finished, or its pg is unknown).
  int LastOpNode(Rank r) const {
    const RankDump* d = job_.Find(r);
    if (!d || d->ops.empty()) return -1;
    uint32_t last = static_cast<uint32_t>(d->ops.size() - 1);
    const OpRecord& op = d->ops[last];
    int gi = groups_.GroupOf(*d, op.pg_name);
    if (gi < 0) return -1;
    if (op.is_p2p) {
      auto p = p2p_node_.find({r, last});
      return p != p2p_node_.end() ? p->second : -1;
    }
    int i = instances_.Find(gi, op.collective_seq);
    return i >= 0 ? g_.instance_node_[i] : -1;
  }

  // A pending P2P op waits for its peer's matching op (the k-th send a->b
  // pairs with the k-th recv b<-a), and, being on the pg's stream, for the
  // earlier pending ops of its own rank in that pg.
  void P2PEdges(Rank r, uint32_t idx, int node) {
    const RankDump* d = job_.Find(r);
    const OpRecord& op = d->ops[idx];
    const Group& g = groups_[groups_.GroupOf(*d, op.pg_name)];
    int m = g.MemberIndex(r);
    // Program order inside the pg.
    for (uint32_t prev : g.p2p[m]) {
      if (prev >= idx) break;
      auto it = p2p_node_.find({r, prev});
      if (it != p2p_node_.end()) {
        Edge(node, it->second, r);
        break;
      }
    }
    if (op.p2p_peer_local < 0 || op.p2p_peer_local >= static_cast<int64_t>(g.members.size())) return;
    Rank peer = g.members[op.p2p_peer_local];
    int pm = g.MemberIndex(peer);
    if (!g.dump[pm]) {
      Edge(node, SinkFor(peer), peer);
      return;
    }
    // Ordinal of this op among r's ops of the same direction to peer.
    int ordinal = 0;
    for (uint32_t prev : g.p2p[m]) {
      if (prev >= idx) break;
      const OpRecord& p = d->ops[prev];
      if (p.op == op.op && p.p2p_peer_local == op.p2p_peer_local) ++ordinal;
    }
    const std::string want = op.op == "send" ? "recv" : "send";
    int seen = 0;
    const RankDump* pd = g.dump[pm];
    for (uint32_t cand : g.p2p[pm]) {
      const OpRecord& c = pd->ops[cand];
      if (c.op != want || c.p2p_peer_local != g.MemberIndex(r)) continue;
      if (seen++ < ordinal) continue;
      if (c.completed) return;
      // The partner is posted; it can start once the ops before it in its
      // stream have finished.
      for (auto it = g.p2p[pm].rbegin(); it != g.p2p[pm].rend(); ++it) {
        if (*it >= cand) continue;
        auto pn = p2p_node_.find({peer, *it});
        if (pn != p2p_node_.end()) Edge(node, pn->second, peer);
        break;
      }
      return;
    }
    Edge(node, BlockingNode(peer), peer);  // the peer never posted it
  }

  const model::Job& job_;
  const World& world_;
  std::optional<std::vector<Rank>> sub_candidates_;
  const GroupTable& groups_;
  const InstanceTable& instances_;
  RankGraph& g_;
  std::map<Rank, int> sink_of_;  // ranks not below dense_
  std::map<std::pair<Rank, uint32_t>, int> p2p_node_;
  size_t dense_ = 0;                                            // ranks below this are looked up in the arrays below
  std::vector<int> blocking_of_, snapshot_of_, sink_of_dense_;  // by rank, -1: not made yet
};

RankGraph RankGraph::Build(const model::Job& job, const World& world, const GroupTable& groups,
                           const InstanceTable& instances) {
  RankGraph g;
  RankGraphBuilder(job, world, groups, instances, &g).Run();
  return g;
}

Rank RankGraph::Via(int from, int to) const {
  CountWork();
  uint64_t key = EdgeKey(from, to);
  auto it = std::lower_bound(via_.begin(), via_.end(), key, [](const auto& e, uint64_t k) { return e.first < k; });
  return it == via_.end() || it->first != key ? -1 : it->second;
}

int RankGraph::Blocking(Rank r) const {
  CountWork();
  if (r >= 0 && static_cast<size_t>(r) < blocking_dense_.size()) return blocking_dense_[static_cast<size_t>(r)];
  auto it = blocking_.find(r);
  return it == blocking_.end() ? -1 : it->second;
}

}  // namespace hangdx::analyze
