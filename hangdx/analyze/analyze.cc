#include "hangdx/analyze/analyze.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "hangdx/analyze/device_graph.h"
#include "hangdx/analyze/latent_order.h"
#include "hangdx/analyze/match.h"
#include "hangdx/analyze/wait_graph.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kCollectiveMismatch:
      return "collective_mismatch";
    case Kind::kSizeMismatch:
      return "size_mismatch";
    case Kind::kMissingRank:
      return "missing_rank";
    case Kind::kCrashedRank:
      return "crashed_rank";
    case Kind::kStraggler:
      return "straggler";
    case Kind::kP2pCycle:
      return "p2p_cycle";
    case Kind::kWaitCycle:
      return "wait_cycle";
    case Kind::kStreamCycle:
      return "stream_cycle";
    case Kind::kOrderInversion:
      return "order_inversion";
    case Kind::kResourceDeadlock:
      return "resource_deadlock";
    case Kind::kTaskQueueDeadlock:
      return "task_queue_deadlock";
    case Kind::kUndecided:
      return "undecided";
  }
  return "undecided";
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "error";
}

namespace {

using model::OpRecord;
using model::RankDump;

std::string R(const std::vector<Rank>& ranks) { return FormatRanks(ranks); }

std::string Plural(size_t n, const char* one, const char* many) { return n == 1 ? one : many; }

// "waits" for one rank, "wait" for several.
const char* Verb(const std::vector<Rank>& ranks, const char* one, const char* many) {
  return ranks.size() == 1 ? one : many;
}

// A process group as resolved across ranks.
struct Group {
  std::string name, desc;
  std::vector<Rank> members;
  model::SharedRanks member_list;  // the same list, shared (identity speeds up group lookup)
  bool inferred = false;
  int64_t max_seq = -1;
  int64_t mismatched_seqs = 0;
  std::vector<const RankDump*> dump;                            // per member; nullptr = no dump
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> coll;  // per member: (seq, op index) by seq
  std::vector<std::vector<uint32_t>> p2p;                       // per member: P2P op indices

  int MemberIndex(Rank r) const {
    auto it = std::lower_bound(members.begin(), members.end(), r);
    return it != members.end() && *it == r ? static_cast<int>(it - members.begin()) : -1;
  }
  // "pg 0 (default_pg)"; a long description (a parser's note) is left out.
  std::string Label() const {
    bool show = !desc.empty() && desc != "undefined" && desc.size() <= 32;
    return "pg " + name + (show ? " (" + desc + ")" : "");
  }
};

// Where one member stands with respect to one (pg, seq).
enum class Presence { kArrived, kNotReached, kPassed, kNoDump };

// One (pg, seq) instance of a collective and its verdict.
struct Instance {
  int group = -1;
  int64_t seq = -1;
  std::vector<Rank> arrived, not_reached, no_dump;
  // Op indices (into the rank's dump) at this seq, per arrived rank i:
  // op_idx[op_start[i] .. op_start[i+1]). Flat: one allocation, not one per rank.
  std::vector<uint32_t> op_idx, op_start{0};
  std::span<const uint32_t> ops(size_t i) const { return {op_idx.data() + op_start[i], op_start[i + 1] - op_start[i]}; }
  // Signature classes among arrived ranks, largest (reference) first; only
  // filled when they disagree (a mismatch).
  std::vector<std::pair<std::string, std::vector<Rank>>> classes;
  bool mismatch = false;
  bool any_pending = false;   // some arrived op not completed
  bool all_in_flight = true;  // every arrived op pending, not retired
  bool failed = false;        // arrived ops finished although a member never came
  int64_t created_ns = 0;     // earliest creation among arrived ops
  int node = -1;              // wait-graph node, -1 if none
  int behind = -1;            // an earlier unfinished problem of the pg it queues behind
  bool problem() const { return mismatch || !not_reached.empty() || !no_dump.empty(); }
};

// Records listed per side of a finding; the rest are counted.
constexpr size_t kEvidencePerSide = 8;

class Analyzer {
 public:
  Analyzer(const model::Job& job, const AnalyzeOptions& opt) : job_(job), opt_(opt) {}

  Diagnosis Run() {
    out_.files = job_.files;
    out_.diagnostics = job_.diagnostics;
    out_.inputs = job_.inputs;
    out_.unreadable = job_.unreadable;
    for (const auto& d : job_.dumps) dump_based_ = dump_based_ || d.from_flight_recorder;
    ResolveWorld();
    ResolveGroups();
    BuildInstances();
    BuildGraph();
    Findings();
    Summaries();
    Verdict();
    return std::move(out_);
  }

 private:
  // ---------------------------------------------------------------- world
  void ResolveWorld() {
    int64_t w = job_.world_size;
    out_.world_size_inferred = w < 0;
    if (w < 0) {
      // gloo keys its one pg_config entry '' and lists the world there while
      // only the default pg exists (torch 2.13, testdata/torch/README.md).
      for (const auto& d : job_.dumps)
        for (const auto& [name, cfg] : d.pg_config)
          if ((name == "0" || name.empty() || cfg.desc == "default_pg") && cfg.ranks_known)
            w = std::max<int64_t>(w, cfg.ranks.back() + 1);
      if (w >= 0) out_.world_size_inferred = false;
    }
    int64_t seen = 0;
    for (const auto& [r, file] : job_.unreadable) seen = std::max(seen, r + 1);
    for (const auto& d : job_.dumps) {
      seen = std::max(seen, d.rank + 1);
      if (d.wait)
        for (Rank r : d.wait->waiting_for) seen = std::max(seen, r + 1);
      for (const auto& [name, cfg] : d.pg_config)
        if (!cfg.ranks.empty()) seen = std::max(seen, cfg.ranks.back() + 1);
    }
    if (w < seen) w = seen;
    // Rank numbers far above the number of ranks with data (a typo, a
    // hostile file) must not make a million-member default pg.
    int64_t with_data = static_cast<int64_t>(job_.dumps.size() + job_.unreadable.size());
    if (out_.world_size_inferred && w > 4 * with_data + 64) {
      model::Diagnostic diag;
      diag.severity = model::Diagnostic::Severity::kWarning;
      diag.message = "rank numbers go up to " + std::to_string(w - 1) + " but only " + std::to_string(with_data) +
                     " ranks have data; not guessing the world size (pass --world-size)";
      out_.diagnostics.push_back(std::move(diag));
      w = -1;
    }
    world_ = w;
    if (w < 0) {
      out_.world_size = static_cast<int64_t>(job_.dumps.size());
      return;
    }
    out_.world_size = w;
    size_t k = 0;
    for (Rank r = 0; r < w; ++r) {
      while (k < job_.dumps.size() && job_.dumps[k].rank < r) ++k;
      if (k >= job_.dumps.size() || job_.dumps[k].rank != r) out_.ranks_without_dump.push_back(r);
    }
  }

  // --------------------------------------------------------------- groups
  // The pg of each (dump, pg name): a short list per dump, looked up by the
  // interned name (views of one dump's interner compare by address first).
  int GroupOf(const RankDump& d, std::string_view name) const {
    const auto& list = dump_groups_[&d - job_.dumps.data()];
    for (const auto& [n, g] : list)
      if (n.data() == name.data() || n == name) return g;
    return -1;
  }

  void ResolveGroups() {
    dump_groups_.resize(job_.dumps.size());
    std::map<std::string, std::set<Rank>> inferred;  // name -> recording ranks
    std::map<std::string, std::string> inferred_desc;
    std::map<std::string, std::vector<std::string_view>> inferred_views;  // name -> views to bind
    std::vector<std::vector<std::pair<std::string_view, std::string_view>>> pending(job_.dumps.size());
    for (size_t di = 0; di < job_.dumps.size(); ++di) {
      const RankDump& d = job_.dumps[di];
      // One pass: each pg name this dump records, with its description.
      std::vector<std::pair<std::string_view, std::string_view>> names;
      for (const auto& op : d.ops) {
        bool have = false;
        for (const auto& [n, desc] : names)
          if (n.data() == op.pg_name.data() || n == op.pg_name) {
            have = true;
            break;
          }
        if (!have) names.emplace_back(op.pg_name, op.pg_desc);
      }
      for (const auto& [name, op_desc] : names) {
        std::string desc(op_desc);
        auto cfg = d.pg_config.find(name);
        if (cfg != d.pg_config.end() && cfg->second.ranks_known) {
          if (desc.empty()) desc = cfg->second.desc;
          dump_groups_[di].emplace_back(name, GroupIndex(std::string(name), desc, cfg->second.ranks, false));
        } else if ((name == "0" || desc == "default_pg") && world_ >= 0) {
          dump_groups_[di].emplace_back(name, GroupIndex(std::string(name), desc, World(), out_.world_size_inferred));
        } else {
          inferred[std::string(name)].insert(d.rank);
          inferred_desc[std::string(name)] = desc;
          pending[di].emplace_back(name, op_desc);
        }
      }
    }
    // Members inferred from which ranks record the pg.
    std::map<std::string, int> inferred_group;
    for (const auto& [name, ranks] : inferred)
      inferred_group[name] = GroupIndex(name, inferred_desc[name],
                                        model::SharedRanks(std::vector<Rank>(ranks.begin(), ranks.end())), true);
    for (size_t di = 0; di < job_.dumps.size(); ++di)
      for (const auto& [name, desc] : pending[di])
        dump_groups_[di].emplace_back(name, inferred_group[std::string(name)]);
    // Index each member's ops.
    for (auto& g : groups_) {
      g.dump.assign(g.members.size(), nullptr);
      g.coll.resize(g.members.size());
      g.p2p.resize(g.members.size());
    }
    for (const auto& d : job_.dumps) {
      for (uint32_t i = 0; i < d.ops.size(); ++i) {
        const OpRecord& op = d.ops[i];
        int gi = GroupOf(d, op.pg_name);
        if (gi < 0) continue;
        Group& g = groups_[gi];
        int m = g.MemberIndex(d.rank);
        if (m < 0) {
          Warn(d, "records pg " + std::string(op.pg_name) + " whose recorded members (" + R(g.members) +
                      ") do not include this rank");
          continue;
        }
        g.dump[m] = &d;
        if (op.is_p2p)
          g.p2p[m].push_back(i);
        else if (op.collective_seq >= 0)
          g.coll[m].emplace_back(op.collective_seq, i);
      }
    }
    for (auto& g : groups_) {
      for (size_t m = 0; m < g.members.size(); ++m) {
        if (!g.dump[m]) g.dump[m] = job_.Find(g.members[m]);
        std::stable_sort(g.coll[m].begin(), g.coll[m].end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
    }
  }

  const model::SharedRanks& World() {
    if (world_ranks_.size() != static_cast<size_t>(world_)) {
      std::vector<Rank> all(static_cast<size_t>(world_));
      for (Rank r = 0; r < world_; ++r) all[r] = r;
      world_ranks_ = model::SharedRanks(std::move(all));
    }
    return world_ranks_;
  }

  // One group per (name, member list); member lists shared between dumps
  // compare by address, others by value.
  int GroupIndex(const std::string& name, const std::string& desc, const model::SharedRanks& members,
                 bool was_inferred) {
    auto& candidates = groups_by_name_[name];
    for (int gi : candidates)
      if (groups_[gi].member_list == members) return gi;
    Group g;
    g.name = name;
    g.desc = desc;
    g.member_list = members;
    g.members = members.get();
    g.inferred = was_inferred;
    groups_.push_back(std::move(g));
    candidates.push_back(static_cast<int>(groups_.size()) - 1);
    return candidates.back();
  }

  void Warn(const RankDump& d, std::string msg) {
    model::Diagnostic diag;
    diag.file = d.file;
    diag.rank = d.rank;
    diag.message = std::move(msg);
    out_.diagnostics.push_back(std::move(diag));
  }

  // ------------------------------------------------------------ instances
  void BuildInstances() {
    for (int gi = 0; gi < static_cast<int>(groups_.size()); ++gi) {
      const Group& g = groups_[gi];
      std::vector<int64_t> seqs;
      for (const auto& list : g.coll)
        for (const auto& [seq, idx] : list) seqs.push_back(seq);
      std::sort(seqs.begin(), seqs.end());
      seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
      for (int64_t seq : seqs) EvaluateInstance(gi, seq);
    }
  }

  void EvaluateInstance(int gi, int64_t seq) {
    const Group& g = groups_[gi];
    Instance in;
    in.group = gi;
    in.seq = seq;
    bool same = true;  // every arrived rank's ops agree with the first one's
    for (size_t m = 0; m < g.members.size(); ++m) {
      Rank r = g.members[m];
      const auto& list = g.coll[m];
      auto lo = std::lower_bound(list.begin(), list.end(), std::make_pair(seq, uint32_t{0}));
      if (lo != list.end() && lo->first == seq) {
        for (auto it = lo; it != list.end() && it->first == seq; ++it) {
          in.op_idx.push_back(it->second);
          const OpRecord& op = g.dump[m]->ops[it->second];
          if (!op.completed) in.any_pending = true;
          if (op.completed || op.retired) in.all_in_flight = false;
          if (op.completed) in.failed = true;  // meaningful only if the instance is a problem
          if (op.time_created_ns > 0 && (in.created_ns == 0 || op.time_created_ns < in.created_ns))
            in.created_ns = op.time_created_ns;
          // NCCL-style dumps are written on timeout and update state
          // themselves: a pending op there is no evidence of progress. gloo
          // retires (and counts as completed) an op that timed out, so a
          // pending, unretired gloo op is still in flight.
          if (op.backend != "gloo") in.all_in_flight = false;
        }
        in.arrived.push_back(r);
        in.op_start.push_back(static_cast<uint32_t>(in.op_idx.size()));
        if (same && in.arrived.size() > 1) same = SameOps(in, 0, in.arrived.size() - 1);
      } else if (!g.dump[m]) {
        in.no_dump.push_back(r);
      } else if (list.empty() || list.back().first < seq) {
        // Reached nothing at or after this seq. A ring buffer that dropped
        // its older entries still shows later ones, so this is a real "not yet".
        in.not_reached.push_back(r);
      }
      // else: the seq is below this rank's oldest kept entry (evicted) or a
      // gap inside its history: it got past it.
    }
    if (opt_.assume_timed_out) in.all_in_flight = false;
    if (in.arrived.empty()) return;
    // A member without a dump took part in every seq that some arrived rank
    // got past (the collective completed); it is a suspect only where the
    // arrived ranks stopped.
    if (!in.no_dump.empty()) {
      for (Rank r : in.arrived) {
        const auto& list = g.coll[g.MemberIndex(r)];
        if (!list.empty() && list.back().first > seq) {
          in.no_dump.clear();
          break;
        }
      }
    }
    groups_[gi].max_seq = std::max(groups_[gi].max_seq, seq);
    if (!same) {
      // The slow path, for the rare seq where ranks disagree: name each
      // distinct signature.
      std::map<std::string, std::vector<Rank>> classes;
      for (size_t i = 0; i < in.arrived.size(); ++i) {
        std::string sig;
        for (uint32_t idx : in.ops(i))
          sig += (sig.empty() ? "" : " + ") + Signature(DumpOf(in, in.arrived[i])->ops[idx]);
        classes[sig].push_back(in.arrived[i]);
      }
      for (auto& [sig, ranks] : classes) in.classes.emplace_back(sig, ranks);
    }
    in.mismatch = in.classes.size() > 1;
    if (in.mismatch) {
      OrderClasses(&in, g);
      ++groups_[gi].mismatched_seqs;
    }
    if (!in.problem()) in.failed = false;
    // A healthy, finished seq needs no more attention: only problems and
    // pending seqs are kept (memory stays proportional to what is wrong).
    if (!in.problem() && !in.any_pending) return;
    int idx = static_cast<int>(instances_.size());
    instance_index_[{gi, seq}] = idx;
    instances_.push_back(std::move(in));
  }

  // True when arrived ranks i and j recorded the same ops at this seq as far
  // as matching is concerned (op names, and the sizes and dtypes compared for
  // that op). Fast: compares interned values, builds no strings.
  bool SameOps(const Instance& in, size_t i, size_t j) const {
    auto a = in.ops(i), b = in.ops(j);
    if (a.size() != b.size()) return false;
    const RankDump* da = DumpOf(in, in.arrived[i]);
    const RankDump* db = DumpOf(in, in.arrived[j]);
    for (size_t k = 0; k < a.size(); ++k) {
      const OpRecord& x = da->ops[a[k]];
      const OpRecord& y = db->ops[b[k]];
      // Common case first: identical records (interned values compare by
      // address within a dump, by value across dumps).
      if (x.op == y.op && x.input_sizes == y.input_sizes && x.output_sizes == y.output_sizes &&
          x.input_dtypes == y.input_dtypes && x.output_dtypes == y.output_dtypes &&
          x.p2p_peer_local == y.p2p_peer_local)
        continue;
      MatchState ms = MatchOps(x, y);
      if (ms != MatchState::kFullyMatched && ms != MatchState::kStateMismatch && ms != MatchState::kUndecided)
        return false;
      if (ms == MatchState::kUndecided && Signature(x) != Signature(y)) return false;
    }
    return true;
  }

  // Orders signature classes: larger first; on a tie, the signature seen
  // more often in this pg's history; then the class without the lowest rank
  // (rank-0-only code paths are the usual deviation) is the reference.
  void OrderClasses(Instance* in, const Group& g) {
    std::map<std::string, int64_t> freq;
    for (size_t m = 0; m < g.members.size(); ++m)
      for (const auto& [seq, idx] : g.coll[m])
        if (seq != in->seq) ++freq[Signature(g.dump[m]->ops[idx])];
    auto first_sig = [](const std::string& s) { return s.substr(0, s.find(" + ")); };
    std::stable_sort(in->classes.begin(), in->classes.end(), [&](const auto& a, const auto& b) {
      if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
      int64_t fa = freq[first_sig(a.first)], fb = freq[first_sig(b.first)];
      if (fa != fb) return fa > fb;
      return a.second.front() > b.second.front();
    });
  }

  const OpRecord& OpAt(const Instance& in, size_t arrived_idx) const {
    const Group& g = groups_[in.group];
    Rank r = in.arrived[arrived_idx];
    return g.dump[g.MemberIndex(r)]->ops[in.ops(arrived_idx).front()];
  }
  const RankDump* DumpOf(const Instance& in, Rank r) const {
    const Group& g = groups_[in.group];
    return g.dump[g.MemberIndex(r)];
  }

  // ---------------------------------------------------------------- graph
  enum class NodeType { kInstance, kP2P, kSnapshot, kIdle, kNoDump };
  struct NodeInfo {
    NodeType type;
    Rank rank = -1;     // P2P, snapshot, idle, no-dump nodes
    int instance = -1;  // instance nodes
    int group = -1;
    uint32_t op = 0;  // P2P op index in the rank's dump
  };
  struct EdgeInfo {
    int from, to;
    Rank via;
  };

  int NewNode(WaitGraph::NodeKind kind, NodeInfo info) {
    int n = graph_.AddNode(kind);
    nodes_.push_back(info);
    return n;
  }

  // True when a log of rank r says it crashed (CUDA error, abort, ...).
  bool Crashed(Rank r) const {
    const RankDump* d = job_.Find(r);
    if (!d) return false;
    for (const auto& e : d->events)
      if (e.kind == model::LogEvent::Kind::kCrash) return true;
    return false;
  }

  int SinkFor(Rank r) {
    auto it = sink_of_.find(r);
    if (it != sink_of_.end()) return it->second;
    bool has = job_.Find(r) != nullptr && !Crashed(r);
    int n = NewNode(WaitGraph::NodeKind::kSink, {has ? NodeType::kIdle : NodeType::kNoDump, r});
    sink_of_[r] = n;
    return n;
  }

  // The node where rank r is blocked now: its last recorded op if that op is
  // stuck, else its live wait state, else a sink (busy elsewhere / no data).
  int BlockingNode(Rank r) {
    auto it = blocking_.find(r);
    if (it != blocking_.end()) return it->second;
    int n = -1;
    const RankDump* d = job_.Find(r);
    if (Crashed(r)) {
      n = SinkFor(r);
      blocking_[r] = n;
      return n;
    }
    if (d && !d->ops.empty()) {
      uint32_t last = static_cast<uint32_t>(d->ops.size() - 1);
      const OpRecord& op = d->ops[last];
      int gi = GroupOf(*d, op.pg_name);
      if (gi >= 0) {
        if (op.is_p2p) {
          auto p = p2p_node_.find({r, last});
          if (p != p2p_node_.end()) n = p->second;
        } else {
          auto x = instance_index_.find({gi, op.collective_seq});
          if (x != instance_index_.end() && instances_[x->second].node >= 0) n = instances_[x->second].node;
        }
      }
    }
    if (n < 0 && d && d->wait) {
      auto s = snapshot_node_.find(r);
      if (s != snapshot_node_.end()) n = s->second;
    }
    if (n < 0) n = SinkFor(r);
    blocking_[r] = n;
    return n;
  }

  void Edge(int from, int to, Rank via) {
    graph_.AddEdge(from, to);
    edges_.push_back({from, to, via});
  }

  void BuildGraph() {
    // Nodes first (so BlockingNode can find them), edges second.
    for (int i = 0; i < static_cast<int>(instances_.size()); ++i) {
      Instance& in = instances_[i];
      if (in.problem() || in.any_pending)
        in.node = NewNode(WaitGraph::NodeKind::kAnd, {NodeType::kInstance, -1, i, in.group});
    }
    for (int gi = 0; gi < static_cast<int>(groups_.size()); ++gi) {
      const Group& g = groups_[gi];
      for (size_t m = 0; m < g.members.size(); ++m)
        for (uint32_t idx : g.p2p[m])
          if (!g.dump[m]->ops[idx].completed)
            p2p_node_[{g.members[m], idx}] =
                NewNode(WaitGraph::NodeKind::kAnd, {NodeType::kP2P, g.members[m], -1, gi, idx});
    }
    // A wait on pg-local ranks (global ranks unknown) still blocks its rank;
    // it gets no edges (PgLocalWaitFindings reports it).
    for (const auto& d : job_.dumps)
      if (d.wait && !d.wait->waiting_for.empty())
        snapshot_node_[d.rank] = NewNode(d.wait->any_of ? WaitGraph::NodeKind::kOr : WaitGraph::NodeKind::kAnd,
                                         {NodeType::kSnapshot, d.rank});
    // Edges. A pg's ops run in order on one stream (NCCL): a seq queued
    // after an earlier problem seq that has not finished cannot finish
    // either, so it is a consequence of that one, not a root of its own.
    // (gloo runs them synchronously and ends a failed op: there the earlier
    // problem is finished and blocks nothing.)
    std::map<int, int> unfinished_problem;  // group -> instance
    for (int i = 0; i < static_cast<int>(instances_.size()); ++i) {
      Instance& in = instances_[i];
      if (in.node < 0) continue;
      auto it = unfinished_problem.find(in.group);
      if (it != unfinished_problem.end()) {
        in.behind = it->second;
        Edge(in.node, instances_[it->second].node, -1);
      } else if (in.problem() && in.any_pending) {
        unfinished_problem[in.group] = i;
      }
    }
    for (auto& in : instances_) {
      if (in.node < 0) continue;
      for (Rank r : in.not_reached) Edge(in.node, BlockingNode(r), r);
      for (Rank r : in.no_dump) Edge(in.node, SinkFor(r), r);
    }
    for (const auto& [key, node] : p2p_node_) P2PEdges(key.first, key.second, node);
    for (const auto& [rank, node] : snapshot_node_) {
      if (job_.Find(rank)->wait->pg_local) continue;
      for (Rank w : job_.Find(rank)->wait->waiting_for) {
        const RankDump* d = job_.Find(w);
        Edge(node, d ? BlockingNode(w) : SinkFor(w), w);
      }
    }
  }

  // A pending P2P op waits for its peer's matching op (the k-th send a->b
  // pairs with the k-th recv b<-a), and, being on the pg's stream, for the
  // earlier pending ops of its own rank in that pg.
  void P2PEdges(Rank r, uint32_t idx, int node) {
    const RankDump* d = job_.Find(r);
    const OpRecord& op = d->ops[idx];
    const Group& g = groups_[GroupOf(*d, op.pg_name)];
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

  // Ranks blocked at a node (the waiters).
  std::vector<Rank> Waiters(int node) const {
    const NodeInfo& n = nodes_[node];
    switch (n.type) {
      case NodeType::kInstance:
        return instances_[n.instance].arrived;
      case NodeType::kP2P:
      case NodeType::kSnapshot:
        return {n.rank};
      default:
        return {};
    }
  }

  std::string NodeLabel(int node) const {
    const NodeInfo& n = nodes_[node];
    switch (n.type) {
      case NodeType::kInstance: {
        const Instance& in = instances_[n.instance];
        return groups_[in.group].Label() + " seq " + std::to_string(in.seq) + " " + std::string(OpAt(in, 0).op);
      }
      case NodeType::kP2P: {
        const OpRecord& op = job_.Find(n.rank)->ops[n.op];
        return groups_[n.group].Label() + " " + std::string(op.profiling_name);
      }
      case NodeType::kSnapshot: {
        const auto& w = *job_.Find(n.rank)->wait;
        return w.current_op + (w.op_seq >= 0 ? " seq " + std::to_string(w.op_seq) : "");
      }
      case NodeType::kIdle:
        return "not in a collective";
      case NodeType::kNoDump:
        return "no dump";
    }
    return "";
  }

  // ------------------------------------------------------------- findings
  void Findings() {
    dead_ = graph_.Deadlocked();
    for (const auto& comp : graph_.CyclicComponents(dead_)) CycleFinding(comp);
    // Root causes: problem instances that are not part of a deadlock.
    for (int i = 0; i < static_cast<int>(instances_.size()); ++i) {
      const Instance& in = instances_[i];
      if (!in.problem() || (in.node >= 0 && dead_[in.node])) continue;
      if (in.behind >= 0) continue;  // queued behind an earlier problem: reported there
      if (in.mismatch)
        MismatchFinding(in);
      else
        RootMissingFinding(in);
    }
    StalledFindings();
    StackFindings();
    PgLocalWaitFindings();
    // Snapshot ranks waiting on ranks that wait on nothing.
    for (const auto& [rank, node] : snapshot_node_) {
      if (dead_[node]) continue;
      SnapshotRootFinding(rank, node);
    }
    // A crash nobody was seen waiting for is still the first thing to look at.
    std::set<Rank> named;
    for (const auto& f : out_.findings) named.insert(f.culprit_ranks.begin(), f.culprit_ranks.end());
    std::vector<Rank> unexplained;
    for (const auto& d : job_.dumps)
      if (Crashed(d.rank) && !named.count(d.rank)) unexplained.push_back(d.rank);
    if (!unexplained.empty()) CrashedFinding(unexplained, nullptr);
    UnexplainedTimeoutFinding();
    AttachCascades();
    for (auto& f : LatentOrderInversions(job_)) out_.findings.push_back(std::move(f));
    for (const auto& device : job_.device) {  // device-level snapshots: analyze/device_graph.h
      DeviceAnalysis d = AnalyzeDevice(device);
      // A device-level chain to a cause (HCCL plogs) says what the
      // rank-level finding about the same culprits says, and more: it
      // replaces it, in its place.
      for (auto& f : d.findings) {
        auto same = std::find_if(out_.findings.begin(), out_.findings.end(), [&](const Finding& g) {
          return f.hang && g.hang && !f.culprit_ranks.empty() && g.culprit_ranks == f.culprit_ranks &&
                 !g.ranks_are_pg_local &&
                 (g.kind == Kind::kMissingRank || g.kind == Kind::kCrashedRank || g.kind == Kind::kUndecided) &&
                 (f.kind == Kind::kMissingRank || f.kind == Kind::kCrashedRank);
        });
        if (same != out_.findings.end())
          *same = std::move(f);
        else
          out_.findings.push_back(std::move(f));
      }
      for (auto& e : d.edges) out_.edges.push_back(std::move(e));
      for (auto& r : d.ranks)
        if (!job_.Find(r.rank)) out_.ranks.push_back(std::move(r));
    }
    std::stable_sort(out_.findings.begin(), out_.findings.end(), [](const Finding& a, const Finding& b) {
      if (a.severity != b.severity) return a.severity > b.severity;
      size_t wa = a.blocked_behind.size() + Count(a, "arrived") + a.cycle.size();
      size_t wb = b.blocked_behind.size() + Count(b, "arrived") + b.cycle.size();
      if (wa != wb) return wa > wb;
      return false;
    });
  }

  static size_t Count(const Finding& f, const char* role) {
    for (const auto& r : f.roles)
      if (r.role == role) return r.ranks.size();
    return 0;
  }

  void AddOpEvidence(Finding* f, Rank r, const OpRecord& op, const std::string& note) {
    const RankDump* d = job_.Find(r);
    // A record merged from another artifact of the rank names that file.
    bool merged = d && op.source >= 0 && static_cast<size_t>(op.source) < d->extra_files.size();
    f->evidence.push_back({!d ? "" : merged ? d->extra_files[op.source] : d->file, r, op.record_id, note});
  }

  std::string WhereInstead(Rank r) {
    const RankDump* d = job_.Find(r);
    if (!d) return "rank " + std::to_string(r) + ": no dump (process gone, or its file was not collected)";
    if (d->ops.empty() && d->wait)
      return "rank " + std::to_string(r) + ": live state " + d->wait->current_op +
             (d->wait->waiting_for.empty() ? ", waiting for nobody" : ", waiting for ranks " + R(d->wait->waiting_for));
    if (d->ops.empty()) return "rank " + std::to_string(r) + ": its dump records no operations";
    const OpRecord& last = d->ops.back();
    // gloo marks a failed op retired like a finished one.
    const char* done = last.backend == "gloo" ? " (ended: finished or failed)" : " (completed)";
    std::string s =
        "rank " + std::to_string(r) + ": last op " + LabelOf(r, last) + (last.completed ? done : " (not completed)");
    if (BlockingNode(r) >= 0 && nodes_[BlockingNode(r)].type == NodeType::kIdle)
      s += "; not blocked in any recorded collective since";
    if (!last.frames->empty()) s += "; called from " + FrameText(*d, last);
    return s;
  }

  std::string FrameText(const RankDump& d, const OpRecord& op) const {
    // First frame outside torch/distributed internals, innermost first.
    for (uint32_t id : *op.frames) {
      const model::Frame& f = d.frames[id];
      if (f.filename.find("torch/distributed") != std::string::npos) continue;
      return f.name + " at " + f.filename + ":" + std::to_string(f.line);
    }
    const model::Frame& f = d.frames[op.frames->front()];
    return f.name + " at " + f.filename + ":" + std::to_string(f.line);
  }

  std::string LabelOf(Rank r, const OpRecord& op) const {
    const RankDump* d = job_.Find(r);
    int gi = d ? GroupOf(*d, op.pg_name) : -1;
    std::string pg = gi >= 0 ? groups_[gi].Label() : "pg " + std::string(op.pg_name);
    if (op.is_p2p) return pg + " " + std::string(op.profiling_name);
    return pg + " seq " + std::to_string(op.collective_seq) + " " + std::string(op.op);
  }

  void FillPg(Finding* f, const Instance& in) {
    const Group& g = groups_[in.group];
    f->pg_name = g.name;
    f->pg_desc = g.desc;
    f->seq = in.seq;
  }

  void MismatchFinding(const Instance& in) {
    const Group& g = groups_[in.group];
    Finding f;
    FillPg(&f, in);
    const auto& ref = in.classes.front();
    // Which rule separates the reference from the others decides the kind.
    Rank ref_rank = ref.second.front();
    size_t ref_i = std::find(in.arrived.begin(), in.arrived.end(), ref_rank) - in.arrived.begin();
    const OpRecord& ref_op = OpAt(in, ref_i);
    bool type_differs = false, dtype_only = true;
    for (size_t c = 1; c < in.classes.size(); ++c) {
      Rank r = in.classes[c].second.front();
      size_t i = std::find(in.arrived.begin(), in.arrived.end(), r) - in.arrived.begin();
      const OpRecord& op = OpAt(in, i);
      MatchState ms = MatchOps(ref_op, op);
      if (ms == MatchState::kTypeMismatch || in.ops(i).size() != in.ops(ref_i).size()) type_differs = true;
      if (ms != MatchState::kDtypeMismatch) dtype_only = false;
      for (Rank x : in.classes[c].second) f.culprit_ranks.push_back(x);
    }
    bool all_to_all_only = IsAllToAll(ref_op.op) && !type_differs;
    f.kind = type_differs ? Kind::kCollectiveMismatch : all_to_all_only ? Kind::kUndecided : Kind::kSizeMismatch;
    f.op = ref_op.op;
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    for (const auto& [sig, ranks] : in.classes) f.roles.push_back({sig, ranks});
    if (!in.not_reached.empty()) f.roles.push_back({"not arrived", in.not_reached});
    if (!in.no_dump.empty()) f.roles.push_back({"no dump", in.no_dump});
    f.hang = true;
    f.severity = Severity::kError;
    std::string what = type_differs ? "call different collectives"
                       : dtype_only ? "disagree on dtype"
                                    : "disagree on sizes";
    f.summary = "ranks of " + g.Label() + " " + what + " at seq " + std::to_string(in.seq) + ": " +
                RankWords(ref.second) + " " + Plural(ref.second.size(), "calls ", "call ") + ref.first;
    for (size_t c = 1; c < in.classes.size(); ++c)
      f.summary += "; " + RankWords(in.classes[c].second) + " " +
                   Plural(in.classes[c].second.size(), "calls ", "call ") + in.classes[c].first;
    if (all_to_all_only) {
      f.severity = Severity::kWarning;
      f.hang = false;
      f.summary = "all_to_all at " + g.Label() + " seq " + std::to_string(in.seq) +
                  " has rank-dependent sizes, which all_to_all allows: cannot decide";
    }
    // Evidence per side, the deviating sides first, a few ranks of each: at
    // 1,000 ranks the reference side would otherwise bury the culprit's record.
    for (size_t c = 1; c <= in.classes.size(); ++c) {
      const auto& ranks = in.classes[c % in.classes.size()].second;
      for (size_t k = 0; k < ranks.size() && k < kEvidencePerSide; ++k) {
        size_t i = std::find(in.arrived.begin(), in.arrived.end(), ranks[k]) - in.arrived.begin();
        for (uint32_t idx : in.ops(i)) {
          const OpRecord& op = DumpOf(in, in.arrived[i])->ops[idx];
          std::string note = Signature(op);
          if (!op.frames->empty()) note += " from " + FrameText(*DumpOf(in, in.arrived[i]), op);
          AddOpEvidence(&f, in.arrived[i], op, note);
        }
      }
      if (ranks.size() > kEvidencePerSide)
        f.evidence.push_back(
            {"", -1, -1,
             "... and " + std::to_string(ranks.size() - kEvidencePerSide) + " more ranks with the same record"});
    }
    if (in.classes.size() == 2 && in.classes[0].second.size() == in.classes[1].second.size())
      f.details.push_back(
          "the two sides are equal in size: the reference is the op this pg ran "
          "most often before, then the side without the lowest rank");
    for (Rank r : f.culprit_ranks) f.details.push_back(WhereInstead(r));
    f.fix_hint = type_differs ? "make every rank of the pg issue the same collectives in the same order: look for a "
                                "rank-dependent branch, uneven data (DistributedSampler, drop_last), or a collective "
                                "that only some ranks reach (checkpointing, logging, clip_grad_norm_)"
                              : "make the tensors of this collective the same shape and dtype on every rank";
    if (in.failed && OpAt(in, 0).backend == "gloo")
      f.details.push_back("gloo has ended the op (timed out or failed) on the ranks that called it");
    DetectedByPyTorch(&f, in);
    out_.findings.push_back(std::move(f));
  }

  // A mismatch that TORCH_DISTRIBUTED_DEBUG=DETAIL caught (kMismatch events
  // at this (pg, seq)): the wrapper compared fingerprints before the op ran
  // and raised on the ranks that logged it, so the job failed, not hung.
  void DetectedByPyTorch(Finding* f, const Instance& in) {
    const Group& g = groups_[in.group];
    std::vector<Rank> raised;
    std::vector<Evidence> lines;
    for (const auto& d : job_.dumps) {
      if (g.MemberIndex(d.rank) < 0) continue;
      for (const auto& e : d.events) {
        if (e.kind != model::LogEvent::Kind::kMismatch || e.seq != in.seq || e.pg != g.name) continue;
        if (raised.empty() || raised.back() != d.rank) raised.push_back(d.rank);
        if (lines.size() < kEvidencePerSide)
          lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
      }
    }
    if (raised.empty()) return;
    f->hang = false;
    f->roles.push_back({"raised the mismatch error", raised});
    f->details.push_back(
        "PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL check compared the ranks' fingerprints before the "
        "collective ran and raised on " +
        RankWords(raised) + ": the job failed fast instead of hanging");
    f->evidence.insert(f->evidence.begin(), lines.begin(), lines.end());
  }

  void RootMissingFinding(const Instance& in) {
    const Group& g = groups_[in.group];
    // Who among the absent ranks is a root cause (not blocked elsewhere)?
    std::vector<Rank> idle, dead, cascade;
    for (Rank r : in.not_reached) {
      int b = BlockingNode(r);
      if (nodes_[b].type == NodeType::kIdle)
        idle.push_back(r);
      else if (nodes_[b].type == NodeType::kNoDump)
        dead.push_back(r);
      else
        cascade.push_back(r);
    }
    for (Rank r : in.no_dump) dead.push_back(r);
    std::sort(dead.begin(), dead.end());
    if (idle.empty() && dead.empty()) return;  // a cascade: reported at its root
    std::vector<Rank> unreadable;
    for (Rank r : dead)
      if (job_.unreadable.count(r)) unreadable.push_back(r);
    if (!unreadable.empty() && idle.empty()) {
      UnreadableFinding(in, unreadable);
      return;
    }
    std::vector<Rank> crashed;
    for (Rank r : dead)
      if (Crashed(r)) crashed.push_back(r);
    if (!crashed.empty()) {
      CrashedFinding(crashed, &in);
      return;
    }
    if (!dump_based_ && idle.empty()) {
      // Text logs only: every rank waiting in a collective logs its timeout,
      // so a rank that printed nothing is not waiting in it (or died
      // silently): it is absent, not known dead.
      idle = dead;
      dead.clear();
    }
    // Of those, the ranks that have no line in the logs at all: their not
    // waiting is not shown, only that nothing of them was given; unless a
    // log given holds several ranks' lines (a job's combined stderr), where
    // a rank's silence is its own.
    std::map<std::string, Rank> rank_of_file;
    bool combined = false;
    for (const auto& d : job_.dumps) {
      auto [it, fresh] = rank_of_file.emplace(d.file, d.rank);
      combined = combined || (!fresh && it->second != d.rank);
    }
    std::vector<Rank> unlogged, logged;
    for (Rank r : idle) (!dump_based_ && !combined && !job_.Find(r) ? unlogged : logged).push_back(r);
    Finding f;
    FillPg(&f, in);
    f.op = OpAt(in, 0).op;
    f.roles.push_back({"arrived", in.arrived});
    if (!logged.empty()) f.roles.push_back({"never arrived", logged});
    if (!unlogged.empty()) f.roles.push_back({"no line in the logs given", unlogged});
    if (!dead.empty()) f.roles.push_back({"no dump", dead});
    if (!cascade.empty()) f.roles.push_back({"blocked elsewhere", cascade});
    f.culprit_ranks = idle;
    f.hang = true;
    f.severity = Severity::kError;
    size_t members = g.members.size();
    std::string where = g.Label() + " seq " + std::to_string(in.seq);
    bool straggler = in.all_in_flight && !idle.empty() && dead.empty();
    if (!idle.empty() && straggler) {
      f.kind = Kind::kStraggler;
      f.hang = false;
      f.severity = Severity::kWarning;
      f.summary = "not a hang yet: ranks " + R(in.arrived) + " wait in " + f.op + " (" + where + ") for " +
                  RankWords(idle) + ", which has not arrived; no wait has timed out, so it may only be slow";
      f.fix_hint =
          "if this persists past the collective timeout it is a hang; otherwise profile the slow "
          "rank (data loading, host contention, a slow link)";
    } else if (!idle.empty()) {
      f.kind = Kind::kMissingRank;
      f.culprit_ranks = idle;
      std::string no_line = RankWords(unlogged) + ", of which there is no line in the logs given";
      f.summary = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f.op + " (" + where +
                  ") for " +
                  (dump_based_ ? RankWords(idle) + ", which never arrived and is not blocked in any recorded collective"
                   : logged.empty() ? no_line
                                    : RankWords(logged) + ", which never arrived (its log shows no wait in it)" +
                                          (unlogged.empty() ? "" : ", and " + no_line));
      if (!dead.empty()) {
        f.summary += "; no dump from " + RankWords(dead);
        f.culprit_ranks.insert(f.culprit_ranks.end(), dead.begin(), dead.end());
      }
      f.fix_hint =
          "find what the absent rank is doing instead (py-spy dump it): a rank-dependent branch, "
          "rank-0-only work (checkpoint, evaluation, logging) or uneven data";
    } else if (dead.size() * 2 <= members) {
      f.kind = Kind::kCrashedRank;
      f.culprit_ranks = dead;
      f.summary = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f.op + " (" + where +
                  ") for " + RankWords(dead) + ", which left no dump: it most likely died (crash, OOM kill, exit)";
      f.fix_hint = "read the log of the dead rank for its exit cause (traceback, CUDA error, OOM killer in dmesg)";
    } else {
      f.kind = Kind::kUndecided;
      f.culprit_ranks = dead;
      f.severity = Severity::kWarning;
      f.summary = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f.op + " (" + where +
                  "), but there is no dump from " + RankWords(dead) + " (" + std::to_string(dead.size()) + " of " +
                  std::to_string(members) + " members): cannot tell who is at fault";
      f.fix_hint = "collect the dumps of the missing ranks";
    }
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    for (Rank r : idle) {
      const RankDump* d = job_.Find(r);
      if (d && !d->ops.empty())
        AddOpEvidence(&f, r, d->ops.back(), "last recorded op");
      else if (d)
        f.evidence.push_back({d->file, r, -1, "no op at this seq"});
    }
    for (size_t i = 0; i < in.arrived.size() && i < kEvidencePerSide; ++i)
      AddOpEvidence(&f, in.arrived[i], DumpOf(in, in.arrived[i])->ops[in.ops(i).front()],
                    "arrived at seq " + std::to_string(in.seq));
    if (in.arrived.size() > kEvidencePerSide)
      f.evidence.push_back({"", -1, -1,
                            "... and " + std::to_string(in.arrived.size() - kEvidencePerSide) +
                                " more ranks arrived at seq " + std::to_string(in.seq)});
    for (Rank r : idle) f.details.push_back(WhereInstead(r));
    for (Rank r : dead) f.details.push_back(WhereInstead(r));
    for (Rank r : cascade) f.details.push_back(WhereInstead(r) + " (blocked: see the other findings)");
    if (in.failed && OpAt(in, 0).backend == "gloo")
      f.details.push_back("gloo has ended the op (timed out or failed) on the ranks that called it");
    out_.findings.push_back(std::move(f));
  }

  // The torch.distributed collective a rank's traceback is in (the
  // innermost distributed_c10d.py frame), "" if none.
  static std::string CollectiveInTraceback(const RankDump& d) {
    for (const auto& s : d.stacks)
      for (const auto& fr : s.frames)
        if (fr.filename.find("distributed_c10d.py") != std::string::npos && fr.name != "wrapper") return fr.name;
    return "";
  }

  // Ranks whose logs report a collective timeout while no error finding
  // explains it: the data given cannot say who is missing, but it is a hang
  // (or a failure), not a healthy job.
  void UnexplainedTimeoutFinding() {
    for (const auto& f : out_.findings)
      if (f.severity == Severity::kError) return;
    std::vector<Rank> timed_out;
    std::vector<Evidence> lines;
    std::string op;
    for (const auto& d : job_.dumps)
      for (const auto& e : d.events) {
        // A watchdog timeout, or an exception that says a wait timed out
        // (gloo: "Timed out waiting 4000ms for send operation").
        bool timeout = e.kind == model::LogEvent::Kind::kTimeout ||
                       (e.kind == model::LogEvent::Kind::kExit && (e.message.find("Timed out") != std::string::npos ||
                                                                   e.message.find("timed out") != std::string::npos));
        if (!timeout) continue;
        if (timed_out.empty() || timed_out.back() != d.rank) {
          timed_out.push_back(d.rank);
          if (lines.size() < kEvidencePerSide)
            lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
        }
        if (op.empty()) op = e.op.empty() ? CollectiveInTraceback(d) : e.op;
      }
    if (timed_out.empty()) return;
    Finding f;
    f.kind = Kind::kUndecided;
    f.severity = Severity::kError;
    f.hang = true;
    f.op = op;
    const std::vector<Rank>& missing = out_.ranks_without_dump;
    f.culprit_ranks = missing;
    f.roles.push_back({"timed out", timed_out});
    if (!missing.empty()) f.roles.push_back({"no log", missing});
    f.summary = RankWords(timed_out) + " " + Verb(timed_out, "reports", "report") + " a timed-out " +
                (op.empty() ? std::string("collective") : op) + ", but the data given does not show whom " +
                Verb(timed_out, "it waits", "they wait") + " for: " +
                (!missing.empty() ? "no log from " + RankWords(missing)
                                  : std::string("the timeouts name no peer and no rank is missing among those seen "
                                                "(world size unknown: pass --world-size)"));
    f.evidence = std::move(lines);
    f.details.push_back("a collective times out when some member does not join it; the members that did are these");
    f.fix_hint = missing.empty() ? "collect the logs (or Flight Recorder dumps) of every rank of the job"
                                 : "collect the log (or Flight Recorder dump) of the missing ranks: one of them "
                                   "never joined the collective";
    out_.findings.push_back(std::move(f));
  }

  // A pg's first pending seq that every member reached and agrees on, yet
  // did not finish. gloo finishes such an op at once unless a member it
  // cannot see (e.g. a pg created in a different order) is missing; for
  // NCCL it is a stall inside the collective (network, device).
  void StalledFindings() {
    std::map<int, int> first_stalled;  // group -> instance
    for (int i = 0; i < static_cast<int>(instances_.size()); ++i) {
      const Instance& in = instances_[i];
      if (in.problem() || !in.any_pending || (in.node >= 0 && dead_[in.node])) continue;
      first_stalled.try_emplace(in.group, i);
    }
    // pg descriptions set by the user name one logical group: if a desc is a
    // different pg name on different ranks, new_group was called in a
    // different order there, and each side waits in a pg the other does not use.
    std::map<std::string, std::vector<int>> by_desc;
    for (const auto& [gi, i] : first_stalled) {
      const std::string& desc = groups_[gi].desc;
      // Descriptions a log parser made up ("NCCL communicator of 8 ranks",
      // "HCCL group ...") name no user group: equal ones mean nothing.
      bool parser_made = desc.rfind("NCCL communicator", 0) == 0 || desc.rfind("HCCL group", 0) == 0;
      if (!desc.empty() && desc != "undefined" && desc != "default_pg" && !parser_made) by_desc[desc].push_back(i);
    }
    std::set<int> explained;
    for (const auto& [desc, list] : by_desc) {
      std::set<std::string> names;
      for (int i : list) names.insert(groups_[instances_[i].group].name);
      if (names.size() < 2) continue;
      // Only when each rank knows the description under one name: a rank in
      // both pgs (two communicators a log parser described alike) is not a
      // creation-order problem.
      std::map<Rank, const std::string*> name_of;
      bool overlap = false;
      for (int i : list)
        for (Rank r : instances_[i].arrived) {
          const std::string* n = &groups_[instances_[i].group].name;
          auto [it, fresh] = name_of.emplace(r, n);
          overlap = overlap || (!fresh && *it->second != *n);
        }
      if (overlap) continue;
      NamingFinding(desc, list);
      explained.insert(list.begin(), list.end());
    }
    for (const auto& [gi, i] : first_stalled)
      if (!explained.count(i)) StallFinding(instances_[i]);
  }

  void NamingFinding(const std::string& desc, const std::vector<int>& list) {
    // Sides: the ranks that know `desc` under one pg name. The larger side is
    // the reference; on a tie, the side with the lowest rank.
    std::vector<std::pair<std::string, std::vector<Rank>>> sides;
    for (int i : list) sides.push_back({groups_[instances_[i].group].name, instances_[i].arrived});
    std::stable_sort(sides.begin(), sides.end(), [](const auto& a, const auto& b) {
      if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
      return a.second.front() < b.second.front();
    });
    Finding f;
    f.kind = Kind::kOrderInversion;
    f.severity = Severity::kError;
    f.hang = true;
    f.op = OpAt(instances_[list.front()], 0).op;
    f.summary = "process groups were created in different orders: pg '" + desc + "' is";
    for (size_t k = 0; k < sides.size(); ++k) {
      f.summary += (k ? (k + 1 == sides.size() ? " and" : ",") : "") + std::string(" pg ") + sides[k].first + " on " +
                   RankWords(sides[k].second);
      f.roles.push_back({"pg " + sides[k].first + " ('" + desc + "')", sides[k].second});
      if (k) f.culprit_ranks.insert(f.culprit_ranks.end(), sides[k].second.begin(), sides[k].second.end());
    }
    f.summary += ", so each side waits in a pg the other side is not using";
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    // Rank-level cycle: the first rank of each side waits for the next side.
    for (const auto& side : sides) f.cycle.push_back(side.second.front());
    std::sort(f.cycle.begin(), f.cycle.end());
    for (int i : list) {
      const Instance& in = instances_[i];
      for (size_t a = 0; a < in.arrived.size(); ++a)
        AddOpEvidence(&f, in.arrived[a], DumpOf(in, in.arrived[a])->ops[in.ops(a).front()],
                      "pending in pg " + groups_[in.group].name + " ('" + desc + "') seq " + std::to_string(in.seq));
    }
    f.details.push_back(
        "pg names are creation counters: every rank must call new_group for every group, "
        "in the same order");
    f.fix_hint = "call new_group (and split_group) for all groups in one fixed order on every rank";
    out_.findings.push_back(std::move(f));
  }

  // True when a log of one of `ranks` reports a timeout or a crash.
  bool AnyTimeoutEvent(const std::vector<Rank>& ranks) const {
    for (Rank r : ranks)
      if (const RankDump* d = job_.Find(r))
        for (const auto& e : d->events)
          if (e.kind == model::LogEvent::Kind::kTimeout || e.kind == model::LogEvent::Kind::kCrash) return true;
    return false;
  }

  void StallFinding(const Instance& in) {
    const Group& g = groups_[in.group];
    Finding f;
    FillPg(&f, in);
    f.op = OpAt(in, 0).op;
    f.kind = Kind::kUndecided;
    bool timed_out = opt_.assume_timed_out;
    // Least advanced state among members: the ranks to look at first.
    std::map<int, std::vector<Rank>> by_state;
    for (size_t a = 0; a < in.arrived.size(); ++a) {
      const OpRecord& op = OpAt(in, a);
      int st = op.completed ? 3 : op.state == model::OpState::kStarted ? 2 : 1;
      by_state[st].push_back(in.arrived[a]);
      if (op.retired && !op.completed) timed_out = true;
      AddOpEvidence(&f, in.arrived[a], op,
                    "in " + std::string(op.op) + " seq " + std::to_string(in.seq) +
                        (op.completed ? ", completed" : ", not completed"));
    }
    // An NCCL log's COLL line is printed at enqueue (ingest/log_completion.h):
    // with no timeout either, "has not finished" is not established.
    if (!timed_out && g.desc.rfind("NCCL communicator of", 0) == 0 && !AnyTimeoutEvent(in.arrived)) return;
    if (by_state.size() > 1) f.culprit_ranks = by_state.begin()->second;
    f.roles.push_back({"arrived", in.arrived});
    if (by_state.size() > 1) f.roles.push_back({"least advanced", by_state.begin()->second});
    f.severity = timed_out ? Severity::kError : Severity::kWarning;
    f.hang = timed_out;
    bool gloo = OpAt(in, 0).backend == "gloo";
    f.summary = "all " + std::to_string(in.arrived.size()) + " recorded members of " + g.Label() + " are in " + f.op +
                " seq " + std::to_string(in.seq) + " and agree on it, but it has not finished";
    if (gloo && g.inferred)
      f.details.push_back("gloo records no pg members: a member that never recorded this pg may be missing");
    else if (by_state.size() > 1)
      f.details.push_back(RankWords(by_state.begin()->second) + " " + Verb(by_state.begin()->second, "has", "have") +
                          " not started it while others have");
    else
      f.details.push_back(
          "no rank is missing or disagrees: look at the transport (NCCL_DEBUG=INFO logs, "
          "network, a stuck device)");
    if (!timed_out) f.details.push_back("no evidence that the wait timed out: it may still be running");
    f.fix_hint = "check the communication layer of the least advanced ranks (NCCL logs, link errors)";
    out_.findings.push_back(std::move(f));
  }

  // The ranks waited for have a dump that could not be read: say so rather
  // than call them dead.
  void UnreadableFinding(const Instance& in, const std::vector<Rank>& unreadable) {
    Finding f;
    FillPg(&f, in);
    f.kind = Kind::kUndecided;
    f.severity = Severity::kError;
    f.hang = true;
    f.op = OpAt(in, 0).op;
    f.culprit_ranks = unreadable;
    f.roles.push_back({"arrived", in.arrived});
    f.roles.push_back({"dump unreadable", unreadable});
    std::string files;
    for (Rank r : unreadable) {
      const std::string& file = job_.unreadable.at(r);
      files += (files.empty() ? "" : ", ") + file;
      f.evidence.push_back({file, r, -1, "could not be read (see input problems)"});
    }
    f.summary = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f.op + " (" +
                groups_[in.group].Label() + " seq " + std::to_string(in.seq) + ") for " + RankWords(unreadable) +
                ", whose dump could not be read (" + files + "): cannot tell what it was doing";
    f.fix_hint = "re-collect the unreadable dump (a truncated file usually means the dump was cut short)";
    out_.findings.push_back(std::move(f));
  }

  // Ranks whose logs say they crashed; `in` is the (pg, seq) others wait in
  // for them, if known.
  void CrashedFinding(const std::vector<Rank>& crashed, const Instance* in) {
    Finding f;
    f.kind = Kind::kCrashedRank;
    f.culprit_ranks = crashed;
    f.severity = Severity::kError;
    f.hang = true;
    std::string what;
    for (Rank r : crashed) {
      for (const auto& e : job_.Find(r)->events) {
        if (e.kind != model::LogEvent::Kind::kCrash) continue;
        if (what.empty()) what = e.message;
        f.evidence.push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message});
        if (!e.pg.empty() && f.pg_name.empty()) f.pg_name = e.pg;
      }
    }
    if (what.size() > 160) what = what.substr(0, 157) + "...";
    f.roles.push_back({"crashed", crashed});
    if (in) {
      FillPg(&f, *in);
      f.op = OpAt(*in, 0).op;
      f.roles.push_back({"waiting for it", in->arrived});
      f.summary = RankWords(in->arrived) + " " + Verb(in->arrived, "waits", "wait") + " in " + f.op + " (" +
                  groups_[in->group].Label() + " seq " + std::to_string(in->seq) + ") for " + RankWords(crashed) +
                  ", which crashed: " + what;
    } else {
      f.summary = RankWords(crashed) + " crashed (" + what +
                  "); the other ranks of its process groups wait for it in their next collective";
    }
    f.fix_hint = "fix the crash first (read the rank's traceback); the other ranks' timeouts are its consequence";
    out_.findings.push_back(std::move(f));
  }

  // Stack-only evidence (py-spy, gdb, faulthandler): which collective call
  // site each rank is blocked in, compared across ranks as STAT does.
  static bool IsCollectiveFrame(const std::string& name) {
    static const std::set<std::string> kOps = {"all_reduce",
                                               "broadcast",
                                               "all_gather",
                                               "all_gather_into_tensor",
                                               "_all_gather_base",
                                               "reduce_scatter",
                                               "reduce_scatter_tensor",
                                               "_reduce_scatter_base",
                                               "reduce",
                                               "gather",
                                               "scatter",
                                               "all_to_all",
                                               "all_to_all_single",
                                               "barrier",
                                               "monitored_barrier",
                                               "send",
                                               "recv",
                                               "isend",
                                               "irecv",
                                               "batch_isend_irecv",
                                               "broadcast_object_list",
                                               "all_gather_object",
                                               "gather_object",
                                               "scatter_object_list",
                                               "all_reduce_coalesced",
                                               "all_gather_coalesced"};
    return kOps.count(name) > 0;
  }

  void StackFindings() {
    struct Where {
      std::string op, site;
      const model::StackSample* stack = nullptr;
    };
    std::map<Rank, Where> where;
    for (const auto& d : job_.dumps) {
      if (d.stacks.empty() || !d.ops.empty()) continue;  // dumps with entries speak for themselves
      Where w;
      for (const auto& st : d.stacks) {
        // The outermost collective frame: broadcast_object_list rather than
        // the broadcast it calls.
        int hit = -1;
        for (int i = 0; i < static_cast<int>(st.frames.size()); ++i)
          if (IsCollectiveFrame(st.frames[i].name)) hit = i;
        if (hit < 0) continue;
        w.op = st.frames[hit].name;
        // The call site: the first caller outside torch.distributed (its
        // decorators, such as c10d_logger's wrapper, say nothing).
        int site = hit + 1;
        while (site < static_cast<int>(st.frames.size()) &&
               st.frames[site].filename.find("torch/distributed") != std::string::npos)
          ++site;
        if (site < static_cast<int>(st.frames.size())) {
          w.site = st.frames[site].name;
          if (!st.frames[site].filename.empty())
            w.site += " at " + st.frames[site].filename + ":" + std::to_string(st.frames[site].line);
        }
        w.stack = &st;
        break;
      }
      if (!w.stack && !d.stacks.empty()) w.stack = &d.stacks.front();
      where[d.rank] = w;
    }
    if (where.size() < 2) return;
    std::map<std::string, std::vector<Rank>> groups;
    std::vector<Rank> elsewhere;
    for (const auto& [r, w] : where) {
      if (w.op.empty())
        elsewhere.push_back(r);
      else
        groups[w.op + " in " + w.site].push_back(r);
    }
    if (groups.empty()) return;
    std::vector<std::pair<std::string, std::vector<Rank>>> sides(groups.begin(), groups.end());
    std::stable_sort(sides.begin(), sides.end(), [](const auto& a, const auto& b) {
      if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
      return a.second.front() > b.second.front();  // tie: the side without the lowest rank is the reference
    });
    Finding f;
    f.severity = Severity::kError;
    f.hang = true;
    f.op = where[sides.front().second.front()].op;
    for (const auto& [site, ranks] : sides) f.roles.push_back({site, ranks});
    if (!elsewhere.empty()) f.roles.push_back({"not in a collective", elsewhere});
    if (sides.size() >= 2) {
      f.kind = Kind::kCollectiveMismatch;
      for (size_t k = 1; k < sides.size(); ++k)
        f.culprit_ranks.insert(f.culprit_ranks.end(), sides[k].second.begin(), sides[k].second.end());
      f.summary =
          "the ranks' stacks are in different collectives: " + RankWords(sides[0].second) + " in " + sides[0].first;
      for (size_t k = 1; k < sides.size(); ++k)
        f.summary += "; " + RankWords(sides[k].second) + " in " + sides[k].first;
      f.fix_hint =
          "make every rank reach the same collectives in the same order (look for an early return or a "
          "rank-dependent branch around the minority's call site)";
    } else if (!elsewhere.empty()) {
      f.kind = Kind::kMissingRank;
      f.culprit_ranks = elsewhere;
      f.summary = RankWords(sides[0].second) + " " + Verb(sides[0].second, "is", "are") + " blocked in " +
                  sides[0].first + " while " + RankWords(elsewhere) + " " + Verb(elsewhere, "is", "are") +
                  " in no collective";
      f.fix_hint = "find what the absent ranks are doing instead (their stacks below)";
    } else {
      return;  // all in the same call: not decidable from stacks
    }
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    for (const auto& [r, w] : where) {
      if (!w.stack) continue;
      std::string top;
      for (size_t i = 0; i < w.stack->frames.size() && i < 3; ++i) top += (i ? " <- " : "") + w.stack->frames[i].name;
      f.evidence.push_back({w.stack->file, r, -1, "stack (line " + std::to_string(w.stack->line) + "): " + top});
    }
    out_.findings.push_back(std::move(f));
  }

  // Waits on ranks known only by their rank inside a pg (HCCL plogs): the
  // culprit is named in that pg's numbering, and the finding says so.
  void PgLocalWaitFindings() {
    std::map<std::pair<std::string, std::vector<Rank>>, std::vector<Rank>> waits;  // (pg, awaited) -> waiters
    for (const auto& d : job_.dumps)
      if (d.wait && d.wait->pg_local && !d.wait->waiting_for.empty())
        waits[{d.wait->pg, d.wait->waiting_for}].push_back(d.rank);
    for (const auto& [key, waiters] : waits) {
      const auto& [pg, awaited] = key;
      Finding f;
      f.kind = Kind::kMissingRank;
      f.severity = Severity::kError;
      f.hang = true;
      f.pg_name = pg;
      f.culprit_ranks = awaited;
      f.ranks_are_pg_local = true;
      const auto& w = *job_.Find(waiters.front())->wait;
      f.op = w.current_op;
      f.seq = w.op_seq;
      f.roles.push_back({"waiting (global ranks)", waiters});
      f.roles.push_back({"awaited (ranks in pg " + pg + ")", awaited});
      f.summary = RankWords(waiters) + " " + Verb(waiters, "waits", "wait") + " in " + w.current_op + " of pg " + pg +
                  " for " + RankWords(awaited) + " of that pg (a rank inside the pg; " +
                  "its global rank is not in these files), which never arrived";
      for (Rank r : waiters) {
        const RankDump* d = job_.Find(r);
        for (const auto& e : d->events)
          if (e.kind == model::LogEvent::Kind::kTimeout)
            f.evidence.push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message});
      }
      f.details.push_back("the awaited rank may itself be waiting on another: get its log too");
      f.fix_hint = "find what the awaited rank of the group is doing (still compiling, in another collective, dead)";
      out_.findings.push_back(std::move(f));
    }
  }

  void SnapshotRootFinding(Rank rank, int node) {
    // Report only ranks that wait directly on a rank that waits on nothing.
    std::vector<Rank> idle, gone;
    for (int s : graph_.successors(node)) {
      if (nodes_[s].type == NodeType::kIdle) idle.push_back(nodes_[s].rank);
      if (nodes_[s].type == NodeType::kNoDump) gone.push_back(nodes_[s].rank);
    }
    if (idle.empty() && gone.empty()) return;
    // Merge with an existing snapshot finding for the same culprits.
    std::vector<Rank> culprits = idle;
    culprits.insert(culprits.end(), gone.begin(), gone.end());
    std::sort(culprits.begin(), culprits.end());
    const auto& w = *job_.Find(rank)->wait;
    for (auto& f : out_.findings) {
      if (f.culprit_ranks == culprits && f.pg_name.empty() && f.op == w.current_op &&
          (f.kind == Kind::kMissingRank || f.kind == Kind::kCrashedRank)) {
        f.roles.front().ranks.push_back(rank);
        f.evidence.push_back({job_.Find(rank)->file, rank, -1, "waits in " + w.current_op});
        RefreshSnapshotSummary(&f);
        return;
      }
    }
    Finding f;
    bool any_crashed = false;
    for (Rank r : gone) any_crashed = any_crashed || Crashed(r);
    f.kind = !idle.empty() || (!dump_based_ && !any_crashed) ? Kind::kMissingRank : Kind::kCrashedRank;
    f.culprit_ranks = culprits;
    f.op = w.current_op;
    f.seq = w.op_seq;
    f.roles.push_back({"waiting", {rank}});
    if (!idle.empty()) f.roles.push_back({"not waiting", idle});
    if (!gone.empty()) f.roles.push_back({"no data", gone});
    f.evidence.push_back({job_.Find(rank)->file, rank, -1, "waits in " + w.current_op});
    for (Rank r : culprits) f.details.push_back(WhereInstead(r));
    f.fix_hint = idle.empty() ? "get the state or log of the silent rank: it most likely died"
                              : "find what the awaited rank is doing instead (py-spy dump it)";
    RefreshSnapshotSummary(&f);
    out_.findings.push_back(std::move(f));
  }

  void RefreshSnapshotSummary(Finding* f) {
    std::sort(f->roles.front().ranks.begin(), f->roles.front().ranks.end());
    f->summary = RankWords(f->roles.front().ranks) + " " + Verb(f->roles.front().ranks, "waits", "wait") + " in " +
                 f->op + " for " + RankWords(f->culprit_ranks) +
                 (f->kind == Kind::kMissingRank ? ", which is not waiting on anyone (it is elsewhere)"
                                                : ", of which there is no state at all");
  }

  void CycleFinding(const std::vector<int>& comp) {
    std::vector<int> cyc = graph_.WitnessCycle(comp);
    Finding f;
    // Ranks in wait order: the rank each edge of the cycle goes through.
    std::vector<Rank> order;
    std::set<int> groups;
    bool all_p2p = true, all_coll = true, all_snapshot = true;
    std::vector<std::string> ops;
    for (size_t i = 0; i < cyc.size(); ++i) {
      int from = cyc[i], to = cyc[(i + 1) % cyc.size()];
      for (const auto& e : edges_)
        if (e.from == from && e.to == to) {
          if (e.via >= 0) order.push_back(e.via);
          break;
        }
      const NodeInfo& n = nodes_[from];
      all_p2p = all_p2p && n.type == NodeType::kP2P;
      all_coll = all_coll && n.type == NodeType::kInstance;
      all_snapshot = all_snapshot && n.type == NodeType::kSnapshot;
      if (n.group >= 0) groups.insert(n.group);
      ops.push_back(NodeLabel(from));
    }
    // The waiter of the first node comes first: rotate so the smallest rank leads.
    if (!order.empty()) {
      std::rotate(order.begin(), order.end() - 1, order.end());
      auto mn = std::min_element(order.begin(), order.end());
      std::rotate(order.begin(), mn, order.end());
    }
    if (all_snapshot) {
      bool p2p = true;
      for (int v : cyc) {
        const std::string& op = job_.Find(nodes_[v].rank)->wait->current_op;
        p2p = p2p && (op.find("send") != std::string::npos || op.find("recv") != std::string::npos);
      }
      all_p2p = p2p;
    }
    f.kind = all_p2p ? Kind::kP2pCycle : (all_coll && groups.size() >= 2) ? Kind::kOrderInversion : Kind::kWaitCycle;
    f.cycle = order;
    f.culprit_ranks = order;
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    f.culprit_ranks.erase(std::unique(f.culprit_ranks.begin(), f.culprit_ranks.end()), f.culprit_ranks.end());
    f.severity = Severity::kError;
    f.hang = true;
    std::string chain;
    for (size_t i = 0; i < cyc.size(); ++i) {
      std::vector<Rank> w = Waiters(cyc[i]);
      Rank via = OrderVia(cyc, i);
      // No rank on the edge: the op is queued behind an earlier unfinished
      // op of its own pg (one stream), not waiting for a peer.
      chain += (i ? "; " : "") + RankWords(w) + " in " + ops[i] + " " +
               (via >= 0 ? std::string(Verb(w, "waits", "wait")) + " for rank " + std::to_string(via)
                         : std::string(Verb(w, "is", "are")) + " queued behind " + ops[(i + 1) % ops.size()]);
    }
    f.op = ops.empty() ? "" : ops.front();
    for (size_t i = 1; i < ops.size(); ++i) f.op += " / " + ops[i];
    std::string cycle_text;
    for (Rank r : order) cycle_text += std::to_string(r) + " -> ";
    if (!order.empty()) cycle_text += std::to_string(order.front());
    const char* what = f.kind == Kind::kP2pCycle ? "circular wait between P2P operations"
                       : f.kind == Kind::kOrderInversion
                           ? "circular wait across process groups issued in different orders"
                           : "circular wait";
    f.summary = std::string(what) + ": " + cycle_text;
    if (cyc.size() <= 4) f.summary += " (" + chain + ")";
    f.details.push_back(chain);
    for (int v : cyc) {
      const NodeInfo& n = nodes_[v];
      if (n.type == NodeType::kInstance) {
        const Instance& in = instances_[n.instance];
        if (f.pg_name.empty()) FillPg(&f, in);
        for (size_t i = 0; i < in.arrived.size(); ++i)
          AddOpEvidence(&f, in.arrived[i], DumpOf(in, in.arrived[i])->ops[in.ops(i).front()],
                        "blocked in " + NodeLabel(v));
      } else if (n.type == NodeType::kP2P) {
        AddOpEvidence(&f, n.rank, job_.Find(n.rank)->ops[n.op], "blocked in " + NodeLabel(v));
      } else if (n.type == NodeType::kSnapshot) {
        f.evidence.push_back({job_.Find(n.rank)->file, n.rank, -1, "waits in " + NodeLabel(v)});
      }
    }
    if (groups.size() >= 2) f.pg_name.clear(), f.seq = -1;
    f.fix_hint = f.kind == Kind::kP2pCycle
                     ? "order sends and receives by rank parity (even ranks send first), or use batch_isend_irecv"
                 : f.kind == Kind::kOrderInversion
                     ? "issue the operations of all process groups in one consistent order on every rank"
                     : "break the cycle: make every rank acquire what it waits for in one global order";
    // Remember which nodes belong to this cycle for cascades.
    cycle_nodes_.push_back({comp, out_.findings.size()});
    out_.findings.push_back(std::move(f));
  }

  Rank OrderVia(const std::vector<int>& cyc, size_t i) const {
    int from = cyc[i], to = cyc[(i + 1) % cyc.size()];
    for (const auto& e : edges_)
      if (e.from == from && e.to == to) return e.via;
    return -1;
  }

  // Ranks blocked at nodes that (transitively) wait on a finding's nodes are
  // "blocked behind" it; they are not reported as findings of their own.
  void AttachCascades() {
    // Map root nodes to findings.
    std::map<int, std::vector<size_t>> root_of_node;
    for (const auto& [comp, fi] : cycle_nodes_)
      for (int v : comp) root_of_node[v].push_back(fi);
    for (size_t fi = 0; fi < out_.findings.size(); ++fi) {
      const Finding& f = out_.findings[fi];
      if (f.seq < 0 || f.pg_name.empty()) continue;
      for (const auto& in : instances_)
        if (in.node >= 0 && in.seq == f.seq && groups_[in.group].name == f.pg_name &&
            groups_[in.group].desc == f.pg_desc)
          root_of_node[in.node].push_back(fi);
    }
    // Reverse BFS from each root over predecessors.
    std::vector<std::vector<int>> pred(graph_.size());
    for (int v = 0; v < graph_.size(); ++v)
      for (int w : graph_.successors(v)) pred[w].push_back(v);
    for (auto& [root, fis] : root_of_node) {
      std::vector<bool> seen(graph_.size(), false);
      std::vector<int> stack{root};
      seen[root] = true;
      std::set<Rank> behind;
      while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        for (int p : pred[v]) {
          if (seen[p]) continue;
          seen[p] = true;
          stack.push_back(p);
          for (Rank r : Waiters(p)) behind.insert(r);
        }
      }
      for (size_t fi : fis) {
        Finding& f = out_.findings[fi];
        std::set<Rank> own(f.culprit_ranks.begin(), f.culprit_ranks.end());
        for (const auto& role : f.roles) own.insert(role.ranks.begin(), role.ranks.end());
        for (Rank r : behind)
          if (!own.count(r)) f.blocked_behind.push_back(r);
        std::sort(f.blocked_behind.begin(), f.blocked_behind.end());
        f.blocked_behind.erase(std::unique(f.blocked_behind.begin(), f.blocked_behind.end()), f.blocked_behind.end());
      }
    }
  }

  // ------------------------------------------------------------ summaries
  void Summaries() {
    for (const auto& g : groups_) {
      PgSummary s;
      s.name = g.name;
      s.desc = g.desc;
      s.ranks = g.members;
      s.ranks_inferred = g.inferred;
      out_.pgs.push_back(std::move(s));
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      out_.pgs[gi].max_seq = groups_[gi].max_seq;
      out_.pgs[gi].mismatched_seqs = groups_[gi].mismatched_seqs;
    }
    for (const auto& in : instances_) {
      PgSummary& s = out_.pgs[in.group];
      if ((in.problem() || in.any_pending) && s.stuck_seq < 0) {
        s.stuck_seq = in.seq;
        s.stuck_op = OpAt(in, 0).op;
      }
    }
    std::set<Rank> ranks;
    for (const auto& d : job_.dumps) ranks.insert(d.rank);
    for (Rank r : out_.ranks_without_dump) ranks.insert(r);
    for (Rank r : ranks) {
      RankSummary s;
      s.rank = r;
      const RankDump* d = job_.Find(r);
      if (!d) {
        s.state = "no dump";
        out_.ranks.push_back(std::move(s));
        continue;
      }
      s.file = d->file;
      for (auto it = d->ops.rbegin(); it != d->ops.rend(); ++it)
        if (it->completed) {
          s.last_completed = LabelOf(r, *it);
          break;
        }
      for (const auto& op : d->ops) {
        s.last_activity_ns = std::max({s.last_activity_ns, op.time_created_ns, op.time_completed_ns});
      }
      int b = BlockingNode(r);
      if (nodes_[b].type == NodeType::kNoDump) {
        s.state = "crashed";
        s.current = "its log reports a crash";
      } else if (nodes_[b].type == NodeType::kIdle) {
        s.state = d->ops.empty() && !d->wait ? "no ops" : "idle";
        s.current = d->ops.empty() ? (d->wait ? d->wait->current_op : "") : "after " + LabelOf(r, d->ops.back());
      } else {
        s.state = b < static_cast<int>(dead_.size()) && dead_[b] ? "deadlocked" : "blocked";
        s.current = NodeLabel(b);
      }
      out_.ranks.push_back(std::move(s));
    }
    // Rank-level wait-for edges.
    std::set<std::pair<int, int>> cyc_edges;
    for (const auto& [comp, fi] : cycle_nodes_)
      for (int v : comp)
        for (int w : graph_.successors(v))
          if (std::binary_search(comp.begin(), comp.end(), w)) cyc_edges.insert({v, w});
    std::set<std::tuple<Rank, Rank>> seen;
    for (const auto& e : edges_) {
      if (e.via < 0) continue;
      for (Rank w : Waiters(e.from)) {
        if (w == e.via || !seen.insert({w, e.via}).second) continue;
        out_.edges.push_back({w, e.via, NodeLabel(e.from), cyc_edges.count({e.from, e.to}) > 0});
      }
    }
  }

  void Verdict() {
    out_.hang = false;
    for (const auto& f : out_.findings)
      if (f.severity == Severity::kError) out_.hang = true;
    if (out_.findings.empty()) {
      if (job_.dumps.empty() && !job_.device.empty()) {
        out_.verdict =
            "No hang found: no op of the device-level snapshot is deadlocked or waits for an op that "
            "nobody issues.";
        // A snapshot read only in part may have lost the very ops that
        // deadlock: say so in the verdict, not only at the end.
        size_t skipped = 0;
        for (const auto& g : job_.diagnostics)
          for (const auto& dev : job_.device)
            if (g.severity != model::Diagnostic::Severity::kInfo && g.file == dev.origin) ++skipped;
        if (skipped)
          out_.verdict = "No hang found in what could be read, but " + std::to_string(skipped) + " part" +
                         (skipped == 1 ? "" : "s") + " of the device snapshot had to be skipped (see the end): fix " +
                         (skipped == 1 ? "it" : "them") + " and rerun before trusting this.";
      } else if (job_.dumps.empty()) {
        out_.verdict = "No usable input: no dump, log, stack dump or snapshot that names a rank could be read.";
      } else {
        out_.verdict = "No hang found: every process group's recorded collectives match on all " +
                       std::to_string(job_.dumps.size()) + " ranks seen.";
        bool gloo = false;
        for (const auto& d : job_.dumps)
          for (const auto& op : d.ops) gloo = gloo || op.backend == "gloo";
        if (gloo)
          out_.verdict +=
              " (gloo records no P2P op in the Flight Recorder: a send/recv deadlock does not show "
              "here; read the ranks' stderr.)";
        bool pending = false;
        for (const auto& p : out_.pgs) pending = pending || p.stuck_seq >= 0;
        if (pending) out_.verdict += " Some are still in progress.";
        if (!out_.ranks_without_dump.empty())
          out_.verdict += " No dump from " + RankWords(out_.ranks_without_dump) + ".";
      }
      return;
    }
    const Finding& f = out_.findings.front();
    std::string head = f.severity == Severity::kError ? "HANG: " : "WARNING: ";
    if (f.kind == Kind::kCollectiveMismatch || f.kind == Kind::kSizeMismatch)
      head = f.hang ? "HANG (mismatch): " : "ERROR (mismatch, raised; no hang): ";
    out_.verdict = head + f.summary + ".";
    if (!f.culprit_ranks.empty())
      out_.verdict += " Look first at " + RankWords(f.culprit_ranks) +
                      (f.ranks_are_pg_local ? " of pg " + f.pg_name : std::string()) + ".";
    if (!job_.unreadable.empty()) {
      std::vector<Rank> bad;
      for (const auto& [r, file] : job_.unreadable) bad.push_back(r);
      if (std::find(f.culprit_ranks.begin(), f.culprit_ranks.end(), bad.front()) == f.culprit_ranks.end())
        out_.verdict += " (The dumps of " + RankWords(bad) + " could not be read.)";
    }
  }

  const model::Job& job_;
  AnalyzeOptions opt_;
  Diagnosis out_;
  int64_t world_ = 0;
  bool dump_based_ = false;  // some rank has a Flight Recorder dump
  std::vector<Group> groups_;
  std::map<std::string, std::vector<int>> groups_by_name_;
  std::vector<std::vector<std::pair<std::string_view, int>>> dump_groups_;  // per dump: pg name -> group
  model::SharedRanks world_ranks_;
  std::vector<Instance> instances_;
  std::map<std::pair<int, int64_t>, int> instance_index_;
  WaitGraph graph_;
  std::vector<NodeInfo> nodes_;
  std::vector<EdgeInfo> edges_;
  std::map<Rank, int> sink_of_, blocking_, snapshot_node_;
  std::map<std::pair<Rank, uint32_t>, int> p2p_node_;
  std::vector<bool> dead_;
  std::vector<std::pair<std::vector<int>, size_t>> cycle_nodes_;
};

}  // namespace

Diagnosis Analyze(const model::Job& job, const AnalyzeOptions& options) { return Analyzer(job, options).Run(); }

}  // namespace hangdx::analyze
