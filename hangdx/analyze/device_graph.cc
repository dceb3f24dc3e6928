#include "hangdx/analyze/device_graph.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "hangdx/analyze/wait_graph.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {
namespace {

using model::DevOp;
using model::OpId;
using model::QueueMode;
using OpKind = DevOp::Kind;
using NodeKind = WaitGraph::NodeKind;

// The stages of an op that get a node while it has not reached them.
enum class Stage : uint8_t { kQueued, kIssued, kStarted, kFinished };

// Why an edge exists; the words come from Chain::Say.
enum class Why : uint8_t {
  kSameOp,            // a later stage of an op needs its earlier one
  kThreadOrder,       // a thread issues in program order
  kThreadHostBlock,   // ... and waits for a host-blocking op (or host_sync) it issued
  kThreadBlockedOn,   // the thread is blocked on that op now
  kQueueOrder,        // a task queue dispatches in FIFO order
  kQueueHostBlock,    // ... and its dispatcher waits for a host-blocking entry
  kQueueDispatching,  // the dispatcher is blocked on that op now
  kStreamOrder,       // a stream runs its tasks in order
  kStreamDrain,       // a host_sync on a stream waits for its last task
  kPoolNeed,          // start needs a unit of a full pool
  kPoolHeld,          // a unit frees when a holder finishes
  kEvent,             // a wait needs the record of its event
  kCollectiveNeed,    // a collective finishes when every member has started it
  kCollectiveMember,  // ... including this member
  kP2p,               // a send / recv finishes when its peer op has started
  kAnySource,         // an any-source recv (or a send to one) needs any candidate
  kMissing,           // what is needed is nowhere in the job
};

// Nodes that stand for no single op.
struct Special {
  enum class Type : uint8_t { kHub, kPool, kOr, kMissing } type;
  // kFailed: an op the device reported failed (a cause); kProducer: an event
  // whose producer the evidence names but that no op records.
  enum class Missing : uint8_t {
    kNone,
    kCollective,
    kP2p,
    kEvent,
    kNoData,
    kFailed,
    kProducer
  } missing = Missing::kNone;
  std::string label;      // pool: "pool aicpu of rank 1 (capacity 2)"; missing: what is missing
  model::Rank rank = -1;  // pool: its rank; missing: the rank that should issue it
  std::vector<OpId> ops;  // pool: holders; or: alternatives; hub: the ops that wait for it
  std::string pg;         // missing collective / P2P
  int64_t seq = -1;
};

struct Node {
  OpId op = -1;  // -1 for a special node
  Stage stage = Stage::kFinished;
  int32_t special = -1;
};

// Where an unfinished op is now.
struct Where {
  enum Place : uint8_t { kNowhere, kPending, kQueue, kStream } place = kNowhere;
  int32_t rank = -1;    // index into DeviceJob::ranks
  int32_t holder = -1;  // thread, queue or stream index
  int32_t pos = -1;
};

bool Blocks(const DevOp& op) { return op.host_blocking || op.kind == OpKind::kHostSync; }

std::string RankWord(model::Rank r) { return "rank " + std::to_string(r); }

const char* FixHint(Kind kind) {
  switch (kind) {
    case Kind::kTaskQueueDeadlock:
      return "give each stream its own task queue (per_stream, PER_STREAM_QUEUE) or launch without the queue "
             "(task_queue off, TASK_QUEUE_ENABLE=0); or issue the ops of all threads in one order";
    case Kind::kOrderInversion:
      return "issue the operations of all pgs in one consistent order on every device (a fixed pg order, or one "
             "lock around issuing)";
    case Kind::kResourceDeadlock:
      return "keep fewer pgs in flight than the pool has units, turn operator retry off (HCCL_OP_RETRY_ENABLE=0), "
             "or enlarge the pool";
    case Kind::kP2pCycle:
      return "pair sends and recvs by parity (even ranks send first, odd ranks receive first) or post them together "
             "with batch_isend_irecv";
    case Kind::kStreamCycle:
      return "record each event before the wait that needs it is queued: move the record ahead of the wait, or the "
             "wait behind the record";
    default:
      return "reorder the ops so that each one waits only for ops issued ahead of it";
  }
}

// The device-level engine: builds the typed wait-for graph of one DeviceJob,
// reduces it and explains what is stuck (the contract is in device_graph.h).
// One object per analysis; Run() once.
class DeviceGraph {
 public:
  explicit DeviceGraph(const model::DeviceJob& job) : job_(job), n_(static_cast<OpId>(job.ops.size())) {}

  DeviceAnalysis Run() {
    Locate();
    MakeOpNodes();
    IndexOps();
    for (size_t r = 0; r < job_.ranks.size(); ++r) RankEdges(static_cast<int32_t>(r));
    for (OpId op = 0; op < n_; ++op) KindEdges(op);
    Reduce();
    Deadlocks();
    MissingFindings();
    ScheduleNote();
    RankSummaries();
    return std::move(out_);
  }

 private:
  // ---- the model ------------------------------------------------------
  bool Finished(OpId op) const { return static_cast<size_t>(op) < job_.finished.size() && job_.finished[op]; }
  bool Valid(OpId op) const { return op >= 0 && op < n_; }
  bool Live(OpId op) const { return Valid(op) && !Finished(op); }

  void Locate() {
    where_.assign(n_, Where());
    for (size_t r = 0; r < job_.ranks.size(); ++r) {
      const auto& dr = job_.ranks[r];
      for (size_t s = 0; s < dr.streams.size(); ++s)
        for (size_t i = 0; i < dr.streams[s].tasks.size(); ++i) Place(dr.streams[s].tasks[i], Where::kStream, r, s, i);
      for (size_t q = 0; q < dr.queues.size(); ++q)
        for (size_t i = 0; i < dr.queues[q].entries.size(); ++i) Place(dr.queues[q].entries[i], Where::kQueue, r, q, i);
      for (size_t t = 0; t < dr.threads.size(); ++t)
        for (size_t i = 0; i < dr.threads[t].pending.size(); ++i)
          Place(dr.threads[t].pending[i], Where::kPending, r, t, i);
    }
  }
  void Place(OpId op, Where::Place place, size_t r, size_t holder, size_t pos) {
    if (!Live(op) || where_[op].place != Where::kNowhere) return;
    if (place == Where::kStream && job_.ops[op].kind == OpKind::kHostSync) return;
    where_[op] = {place, static_cast<int32_t>(r), static_cast<int32_t>(holder), static_cast<int32_t>(pos)};
  }
  bool HeadStarted(OpId op) const {
    const Where& w = where_[op];
    return w.place == Where::kStream && w.pos == 0 && job_.ranks[w.rank].streams[w.holder].head_started;
  }

  // ---- nodes and edges -------------------------------------------------
  int AddNode(NodeKind kind, int k, Node node) {
    kinds_.push_back(kind);
    k_.push_back(k);
    nodes_.push_back(node);
    adj_.emplace_back();
    return static_cast<int>(nodes_.size()) - 1;
  }
  int AddSpecial(NodeKind kind, int k, Special s) {
    specials_.push_back(std::move(s));
    Node node;
    node.special = static_cast<int32_t>(specials_.size()) - 1;
    return AddNode(kind, k, node);
  }
  void Edge(int from, int to, Why why) {
    if (from < 0 || to < 0 || from == to) return;
    adj_[from].push_back({to, why});
  }
  // The node of the thread having issued `op` (queued, or issued where there is no queue).
  int QNode(OpId op) const { return q_[op] >= 0 ? q_[op] : i_[op]; }
  int INode(OpId op) const { return i_[op]; }
  int SNode(OpId op) const { return s_[op]; }
  int FNode(OpId op) const { return Live(op) ? f_[op] : -1; }

  void MakeOpNodes() {
    q_.assign(n_, -1);
    i_.assign(n_, -1);
    s_.assign(n_, -1);
    f_.assign(n_, -1);
    for (OpId op = 0; op < n_; ++op) {
      if (Finished(op)) continue;
      const DevOp& o = job_.ops[op];
      const Where& w = where_[op];
      bool sync = o.kind == OpKind::kHostSync;
      if (w.place == Where::kPending && !sync && QueueName(o) != nullptr)
        q_[op] = AddNode(NodeKind::kAnd, 1, {op, Stage::kQueued, -1});
      if (w.place == Where::kPending || (w.place == Where::kQueue && !sync))
        i_[op] = AddNode(NodeKind::kAnd, 1, {op, Stage::kIssued, -1});
      if (!sync && w.place != Where::kNowhere && !HeadStarted(op))
        s_[op] = AddNode(NodeKind::kAnd, 1, {op, Stage::kStarted, -1});
      f_[op] = AddNode(NodeKind::kAnd, 1, {op, Stage::kFinished, -1});
      int prev = -1;
      for (int node : {q_[op], i_[op], s_[op], f_[op]}) {
        if (node < 0) continue;
        Edge(node, prev, Why::kSameOp);
        prev = node;
      }
    }
  }

  // The queue `op` goes through when its thread issues it, by name
  // ("device" or its stream), or nullptr without one.
  const std::string* QueueName(const DevOp& op) const {
    static const std::string kDevice = "device";
    if (op.kind == OpKind::kHostSync) return nullptr;
    switch (job_.queue_mode) {
      case QueueMode::kOff:
        return nullptr;
      case QueueMode::kPerDevice:
        return &kDevice;
      case QueueMode::kPerStream:
        return &op.stream;
    }
    return nullptr;
  }

  // Per-rank state while its edges are made.
  struct QueueState {
    int32_t index = -1;  // into DeviceRank::queues, -1 when not listed (empty)
    OpId tail = -1;      // last entry
    OpId dispatching = -1;
    std::map<std::string, OpId> last_for;  // stream -> last entry destined to it
  };

  // Per-rank state while its edges are made: the last live task of each
  // stream, and each task queue's state by name.
  struct RankState {
    std::map<std::string, OpId> stream_tail;
    std::map<std::string, QueueState> queues;
    // The last op destined to `stream` before the pending ops: in a queue,
    // else on the stream.
    OpId Destined(const std::string& stream) const {
      for (const auto& [name, qs] : queues) {
        auto it = qs.last_for.find(stream);
        if (it != qs.last_for.end()) return it->second;
      }
      return Tail(stream_tail, stream);
    }
  };

  void RankEdges(int32_t r) {
    const model::DeviceRank& dr = job_.ranks[r];
    for (size_t pi = 0; pi < dr.pools.size(); ++pi) pool_of_[{r, dr.pools[pi].name}] = static_cast<int32_t>(pi);
    RankState rs;
    StreamEdges(r, &rs);
    QueueEdges(r, &rs);
    // Host_syncs already blocking a thread wait for what is destined to their stream.
    for (const auto& t : dr.threads) {
      OpId b = t.blocked_on;
      if (Live(b) && job_.ops[b].kind == OpKind::kHostSync && job_.ops[b].event.empty())
        Edge(FNode(b), FNode(rs.Destined(job_.ops[b].stream)), Why::kStreamDrain);
    }
    for (const auto& t : dr.threads) ThreadEdges(r, t, rs);
  }

  // A stream runs its tasks in order.
  void StreamEdges(int32_t r, RankState* rs) {
    for (const auto& s : job_.ranks[r].streams) {
      OpId prev = -1;
      for (OpId t : s.tasks) {
        if (!Live(t) || where_[t].place != Where::kStream || where_[t].rank != r) continue;
        if (prev >= 0) Edge(SNode(t), FNode(prev), Why::kStreamOrder);
        prev = t;
      }
      if (prev >= 0) rs->stream_tail[s.name] = prev;
    }
  }

  // The issue stage of op `e` entering a queue behind `tail` (or, at its
  // head, behind the op its dispatcher is blocked on).
  void QueueOrderEdge(OpId e, OpId tail, OpId dispatching) {
    if (tail >= 0) {
      if (Blocks(job_.ops[tail]))
        Edge(INode(e), FNode(tail), Why::kQueueHostBlock);
      else
        Edge(INode(e), INode(tail), Why::kQueueOrder);
    } else if (dispatching >= 0) {
      Edge(INode(e), FNode(dispatching), Why::kQueueDispatching);
    }
  }

  // A task queue dispatches in FIFO order; each entry starts on its stream
  // after what was destined there before it.
  void QueueEdges(int32_t r, RankState* rs) {
    const model::DeviceRank& dr = job_.ranks[r];
    for (size_t qi = 0; qi < dr.queues.size(); ++qi) {
      const model::TaskQueue& q = dr.queues[qi];
      std::string name = job_.queue_mode == QueueMode::kPerDevice && dr.queues.size() == 1 ? "device" : q.name;
      QueueState& qs = rs->queues[name];
      qs.index = static_cast<int32_t>(qi);
      qs.dispatching = Live(q.dispatching) ? q.dispatching : -1;
      for (OpId e : q.entries) {
        if (!Live(e) || where_[e].place != Where::kQueue || where_[e].rank != r) continue;
        const DevOp& op = job_.ops[e];
        QueueOrderEdge(e, qs.tail, qs.tail >= 0 ? -1 : qs.dispatching);
        auto ahead = qs.last_for.find(op.stream);
        OpId prev = ahead != qs.last_for.end() ? ahead->second : Tail(rs->stream_tail, op.stream);
        Edge(SNode(e), FNode(prev), Why::kStreamOrder);
        qs.last_for[op.stream] = e;
        qs.tail = e;
      }
    }
  }

  // A thread issues its pending ops in order (after a host-blocking op ahead
  // has finished, after the op it is blocked on); each goes through its queue
  // and starts on its stream after what was destined there before it.
  void ThreadEdges(int32_t r, const model::HostThread& t, const RankState& rs) {
    OpId prev = -1;
    std::map<std::string, OpId> last_for;  // stream -> this thread's last pending op destined to it
    std::map<std::string, OpId> last_in;   // queue -> this thread's last pending op in it
    auto before_on = [&](const std::string& stream) {
      auto it = last_for.find(stream);
      return it != last_for.end() ? it->second : rs.Destined(stream);
    };
    for (OpId p : t.pending) {
      if (!Live(p) || where_[p].place != Where::kPending || where_[p].rank != r) continue;
      const DevOp& op = job_.ops[p];
      if (prev < 0) {
        if (Live(t.blocked_on)) Edge(QNode(p), FNode(t.blocked_on), Why::kThreadBlockedOn);
      } else if (Blocks(job_.ops[prev])) {
        Edge(QNode(p), FNode(prev), Why::kThreadHostBlock);
      } else {
        Edge(QNode(p), QNode(prev), Why::kThreadOrder);
      }
      prev = p;
      if (op.kind == OpKind::kHostSync) {
        if (op.event.empty()) Edge(FNode(p), FNode(before_on(op.stream)), Why::kStreamDrain);
        continue;
      }
      if (const std::string* qname = QueueName(op)) {
        auto mine = last_in.find(*qname);
        OpId ahead = mine != last_in.end() ? mine->second : -1;
        OpId dispatching = -1;
        if (ahead < 0) {
          auto qs = rs.queues.find(*qname);
          if (qs != rs.queues.end()) {
            ahead = qs->second.tail;
            dispatching = qs->second.dispatching;
          }
        }
        QueueOrderEdge(p, ahead, dispatching);
        last_in[*qname] = p;
      }
      Edge(SNode(p), FNode(before_on(op.stream)), Why::kStreamOrder);
      last_for[op.stream] = p;
    }
  }

  static OpId Tail(const std::map<std::string, OpId>& tails, const std::string& stream) {
    auto it = tails.find(stream);
    return it != tails.end() ? it->second : -1;
  }

  // The k-of-n node of a full pool, or -1 when a unit is free.
  int PoolNode(int32_t r, const std::string& name, OpId needer) {
    auto key = std::make_pair(r, name);
    auto known = pool_node_.find(key);
    if (known != pool_node_.end()) return known->second;
    int node = -1;
    auto it = pool_of_.find(key);
    if (it != pool_of_.end()) {
      const model::Pool& pool = job_.ranks[r].pools[it->second];
      std::vector<OpId> holders;
      for (OpId h : pool.holders)
        if (Live(h) && h != needer && std::find(holders.begin(), holders.end(), h) == holders.end())
          holders.push_back(h);
      int held = static_cast<int>(holders.size());
      if (held >= pool.capacity && held > 0) {
        Special s;
        s.type = Special::Type::kPool;
        s.rank = job_.ranks[r].rank;
        s.label =
            "pool " + name + " of rank " + std::to_string(s.rank) + " (capacity " + std::to_string(pool.capacity) + ")";
        s.ops = holders;
        node = AddSpecial(NodeKind::kKofN, held - pool.capacity + 1, std::move(s));
        for (OpId h : holders) Edge(node, FNode(h), Why::kPoolHeld);
      }
    }
    pool_node_[key] = node;
    return node;
  }

  void IndexOps() {
    for (const auto& e : job_.recorded_events) recorded_.insert(e);
    for (OpId op = 0; op < n_; ++op) {
      const DevOp& o = job_.ops[op];
      switch (o.kind) {
        case OpKind::kRecord:
          if (Finished(op))
            recorded_.insert(o.event);
          else
            records_[o.event].push_back(op);
          break;
        case OpKind::kCollective:
          coll_.try_emplace({o.pg, o.rank, o.seq}, op);
          MaxInto(&coll_max_[{o.pg, o.rank}], o.seq);
          break;
        case OpKind::kSend:
          sends_.try_emplace({o.pg, o.rank, o.peer, o.seq}, op);
          MaxInto(&send_max_[{o.pg, o.rank, o.peer}], o.seq);
          sends_to_[{o.pg, o.peer}].push_back(op);
          break;
        case OpKind::kRecv:
          if (o.peer < 0) {
            any_recvs_[{o.pg, o.rank}].push_back(op);
          } else {
            recvs_.try_emplace({o.pg, o.peer, o.rank, o.seq}, op);
            MaxInto(&recv_max_[{o.pg, o.peer, o.rank}], o.seq);
          }
          break;
        default:
          break;
      }
    }
  }
  static void MaxInto(int64_t* slot, int64_t v) { *slot = std::max(*slot, v); }

  int Missing(const std::string& key, Special s) {
    auto it = missing_.find(key);
    if (it != missing_.end()) return it->second;
    s.type = Special::Type::kMissing;
    int node = AddSpecial(NodeKind::kSink, 0, std::move(s));
    missing_[key] = node;
    return node;
  }
  int NoData(model::Rank r) {
    Special s;
    s.missing = Special::Missing::kNoData;
    s.rank = r;
    s.label = "rank " + std::to_string(r) + " has no data in this snapshot";
    return Missing("nodata:" + std::to_string(r), std::move(s));
  }
  // An OR node over the given nodes; the node itself when there is one.
  int AnyOf(const std::vector<int>& nodes, const std::vector<OpId>& ops, const std::string& label, Why why) {
    if (nodes.size() == 1) return nodes[0];
    Special s;
    s.type = Special::Type::kOr;
    s.label = label;
    s.ops = ops;
    int node = AddSpecial(NodeKind::kOr, 1, std::move(s));
    for (int x : nodes) Edge(node, x, why);
    return node;
  }

  void KindEdges(OpId op) {
    int f = FNode(op);
    if (f < 0) return;
    const DevOp& o = job_.ops[op];
    if (!o.pool.empty() && SNode(op) >= 0 && where_[op].rank >= 0)
      Edge(SNode(op), PoolNode(where_[op].rank, o.pool, op), Why::kPoolNeed);
    if (o.failed) {  // never finishes: whatever waits for it waits for this cause
      Special s;
      s.missing = Special::Missing::kFailed;
      s.rank = o.rank;
      s.label = D(op) + " on stream " + o.stream + " of rank " + std::to_string(o.rank) +
                " never finishes: the device reports it failed" + (o.source.empty() ? "" : " (" + o.source + ")");
      s.ops = {op};
      Edge(f, Missing("failed:" + std::to_string(op), std::move(s)), Why::kMissing);
      return;
    }
    switch (o.kind) {
      case OpKind::kWait:
      case OpKind::kHostSync:
        if (!o.event.empty()) EventEdge(op, f);
        break;
      case OpKind::kCollective:
        CollectiveEdge(op, f);
        break;
      case OpKind::kSend:
      case OpKind::kRecv:
        P2pEdge(op, f);
        break;
      default:
        break;
    }
  }

  void EventEdge(OpId op, int f) {
    const DevOp& o = job_.ops[op];
    if (recorded_.count(o.event)) return;
    auto it = records_.find(o.event);
    if (it == records_.end()) {
      Special s;
      s.missing = Special::Missing::kEvent;
      s.rank = o.rank;
      s.label = "event " + o.event + ", which no op records";
      if (auto who = job_.event_producer.find(o.event); who != job_.event_producer.end()) {
        auto r = job_.event_producer_rank.find(o.event);
        s.missing = Special::Missing::kProducer;
        s.rank = r == job_.event_producer_rank.end() ? -1 : r->second;
        s.label = who->second + " never records " + o.event;
      }
      Edge(f, Missing("event:" + o.event, std::move(s)), Why::kMissing);
      return;
    }
    auto known = event_node_.find(o.event);
    if (known == event_node_.end()) {
      std::vector<int> nodes;
      for (OpId r : it->second) nodes.push_back(FNode(r));
      known = event_node_.emplace(o.event, AnyOf(nodes, it->second, "event " + o.event, Why::kEvent)).first;
    }
    Edge(f, known->second, Why::kEvent);
  }

  void CollectiveEdge(OpId op, int f) {
    const DevOp& o = job_.ops[op];
    auto pg = job_.pgs.find(o.pg);
    if (pg == job_.pgs.end() || o.seq < 0) return;
    auto key = std::make_pair(o.pg, o.seq);
    auto known = hub_.find(key);
    if (known == hub_.end()) {
      Special s;
      s.type = Special::Type::kHub;
      s.pg = o.pg;
      s.seq = o.seq;
      s.label = o.name + " " + o.pg + " seq " + std::to_string(o.seq);
      int hub = AddSpecial(NodeKind::kAnd, 1, std::move(s));
      known = hub_.emplace(key, hub).first;
      for (model::Rank m : pg->second) {
        auto c = coll_.find({o.pg, m, o.seq});
        if (c != coll_.end()) {
          Edge(hub, SNode(c->second), Why::kCollectiveMember);
          continue;
        }
        if (!job_.FindRank(m)) {
          Edge(hub, NoData(m), Why::kMissing);
          continue;
        }
        auto mx = coll_max_.find({o.pg, m});
        if (mx != coll_max_.end() && mx->second > o.seq) continue;  // passed: its record was not kept
        Special miss;
        miss.missing = Special::Missing::kCollective;
        miss.rank = m;
        miss.pg = o.pg;
        miss.seq = o.seq;
        miss.label =
            "rank " + std::to_string(m) + " never issues " + o.name + " " + o.pg + " seq " + std::to_string(o.seq);
        Edge(hub, Missing("coll:" + o.pg + ":" + std::to_string(o.seq) + ":" + std::to_string(m), std::move(miss)),
             Why::kMissing);
      }
    }
    specials_[nodes_[known->second].special].ops.push_back(op);
    Edge(f, known->second, Why::kCollectiveNeed);
  }

  // The node an any-source recv of o.rank on o.pg waits for: an OR over the
  // sends to it that no named recv takes, a missing node when there are
  // none, or -2 when some candidate has started already (nothing to wait
  // for). Made once per (pg, rank).
  int AnySendNode(const DevOp& o) {
    auto key = std::make_pair(o.pg, o.rank);
    auto known = any_send_node_.find(key);
    if (known != any_send_node_.end()) return known->second;
    int node = -2;  // -2: some candidate has started already
    std::vector<int> nodes;
    std::vector<OpId> cands;
    auto it = sends_to_.find(key);
    for (size_t i = 0; it != sends_to_.end() && i < it->second.size(); ++i) {
      OpId s = it->second[i];
      const DevOp& so = job_.ops[s];
      if (!Live(s) || recvs_.count({so.pg, so.rank, o.rank, so.seq})) continue;
      if (SNode(s) < 0) {
        nodes.clear();
        break;
      }
      nodes.push_back(SNode(s));
      cands.push_back(s);
      if (i + 1 == it->second.size()) node = -1;
    }
    if (!nodes.empty()) {
      node = AnyOf(nodes, cands, "a send to rank " + std::to_string(o.rank) + " on " + o.pg, Why::kAnySource);
    } else if (node != -2 || it == sends_to_.end()) {
      Special miss;
      miss.missing = Special::Missing::kP2p;
      miss.pg = o.pg;
      miss.seq = o.seq;
      miss.label = "no rank sends to rank " + std::to_string(o.rank) + " on " + o.pg;
      node = Missing("anysend:" + o.pg + ":" + std::to_string(o.rank), std::move(miss));
    }
    any_send_node_.emplace(key, node);
    return node;
  }

  void P2pEdge(OpId op, int f) {
    const DevOp& o = job_.ops[op];
    const bool send = o.kind == OpKind::kSend;
    if (!send && o.peer < 0) {  // any source: any send to this rank that no named recv takes
      int node = AnySendNode(o);
      if (node >= 0) {
        const Special* sp = nodes_[node].special >= 0 ? &specials_[nodes_[node].special] : nullptr;
        Edge(f, node, sp && sp->type == Special::Type::kMissing ? Why::kMissing : Why::kAnySource);
      }
      return;
    }
    const model::Rank src = send ? o.rank : o.peer, dst = send ? o.peer : o.rank;
    if (!job_.FindRank(o.peer)) {
      Edge(f, NoData(o.peer), Why::kMissing);
      return;
    }
    if (send) {
      auto r = recvs_.find({o.pg, src, dst, o.seq});
      if (r != recvs_.end()) {
        Edge(f, SNode(r->second), Why::kP2p);
        return;
      }
      auto any = any_recvs_.find({o.pg, dst});
      if (any != any_recvs_.end()) {
        std::vector<int> nodes;
        std::vector<OpId> cands;
        for (OpId a : any->second) {
          if (!Live(a)) continue;
          if (SNode(a) < 0) return;  // an any-source recv has started: it can take this send
          nodes.push_back(SNode(a));
          cands.push_back(a);
        }
        if (!nodes.empty()) {
          Edge(
              f,
              AnyOf(nodes, cands, "an any-source recv of rank " + std::to_string(dst) + " on " + o.pg, Why::kAnySource),
              Why::kAnySource);
          return;
        }
      }
      auto mx = recv_max_.find({o.pg, src, dst});
      if (mx != recv_max_.end() && mx->second > o.seq) return;
    } else {
      auto s = sends_.find({o.pg, src, dst, o.seq});
      if (s != sends_.end()) {
        Edge(f, SNode(s->second), Why::kP2p);
        return;
      }
      auto mx = send_max_.find({o.pg, src, dst});
      if (mx != send_max_.end() && mx->second > o.seq) return;
    }
    Special miss;
    miss.missing = Special::Missing::kP2p;
    miss.rank = o.peer;
    miss.pg = o.pg;
    miss.seq = o.seq;
    miss.label = "rank " + std::to_string(o.peer) + " never posts the " + (send ? "recv from rank " : "send to rank ") +
                 std::to_string(o.rank) + " on " + o.pg + " #" + std::to_string(o.seq);
    Edge(f,
         Missing(std::string(send ? "recv:" : "send:") + o.pg + ":" + std::to_string(src) + ":" + std::to_string(dst) +
                     ":" + std::to_string(o.seq),
                 std::move(miss)),
         Why::kMissing);
  }

  // ---- reduction and witnesses ------------------------------------------
  void Reduce() {
    for (auto& a : adj_) {
      std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      a.erase(std::unique(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
              a.end());
    }
    for (size_t v = 0; v < nodes_.size(); ++v) graph_.AddNode(kinds_[v], k_[v]);
    for (size_t v = 0; v < nodes_.size(); ++v)
      for (const auto& [w, why] : adj_[v]) graph_.AddEdge(static_cast<int>(v), w);
    dead_ = graph_.Deadlocked();
    std::vector<bool> op_dead(n_, false);
    for (size_t v = 0; v < nodes_.size(); ++v)
      if (dead_[v] && nodes_[v].op >= 0) op_dead[nodes_[v].op] = true;
    for (OpId op = 0; op < n_; ++op)
      if (op_dead[op]) out_.deadlocked.push_back(op);
  }

  Why WhyOf(int from, int to) const {
    const auto& a = adj_[from];
    auto it = std::lower_bound(a.begin(), a.end(), to, [](const auto& x, int t) { return x.first < t; });
    return it != a.end() && it->first == to ? it->second : Why::kSameOp;
  }

  // A shortest cycle through `start` inside component `comp` (BFS), or
  // empty. Uses parent_ (all -2 between calls).
  std::vector<int> CycleThrough(int start, int comp) {
    std::vector<int> touched{start};
    std::deque<int> q{start};
    parent_[start] = -1;
    std::vector<int> path;
    while (!q.empty() && path.empty()) {
      int v = q.front();
      q.pop_front();
      for (const auto& [w, why] : adj_[v]) {
        if (comp_of_[w] != comp) continue;
        if (w == start) {
          for (int x = v; x != -1; x = parent_[x]) path.push_back(x);
          std::reverse(path.begin(), path.end());
          break;
        }
        if (parent_[w] != -2) continue;
        parent_[w] = v;
        touched.push_back(w);
        q.push_back(w);
      }
    }
    for (int v : touched) parent_[v] = -2;
    return path;
  }

  void Deadlocks() {
    auto comps = graph_.CyclicComponents(dead_);
    comp_of_.assign(nodes_.size(), -1);
    for (size_t c = 0; c < comps.size(); ++c)
      for (int v : comps[c]) comp_of_[v] = static_cast<int>(c);
    // Every other dead node waits, through dead nodes, for some component:
    // the first one a backward search from the components reaches.
    std::vector<std::vector<int>> pred(nodes_.size());
    for (size_t v = 0; v < nodes_.size(); ++v)
      if (dead_[v])
        for (const auto& [w, why] : adj_[v])
          if (dead_[w]) pred[w].push_back(static_cast<int>(v));
    std::vector<int> owner(comp_of_);
    std::deque<int> q;
    for (size_t v = 0; v < nodes_.size(); ++v)
      if (owner[v] >= 0) q.push_back(static_cast<int>(v));
    while (!q.empty()) {
      int w = q.front();
      q.pop_front();
      for (int v : pred[w])
        if (owner[v] < 0) {
          owner[v] = owner[w];
          q.push_back(v);
        }
    }
    std::vector<std::vector<OpId>> behind(comps.size());
    std::vector<std::set<OpId>> in_comp(comps.size());
    for (size_t c = 0; c < comps.size(); ++c)
      for (int v : comps[c])
        if (nodes_[v].op >= 0) in_comp[c].insert(nodes_[v].op);
    std::vector<bool> seen(n_, false);
    for (size_t v = 0; v < nodes_.size(); ++v) {
      OpId op = nodes_[v].op;
      if (owner[v] < 0 || op < 0 || seen[op] || in_comp[owner[v]].count(op)) continue;
      seen[op] = true;
      behind[owner[v]].push_back(op);
    }
    std::vector<Finding> found;
    parent_.assign(nodes_.size(), -2);
    for (size_t c = 0; c < comps.size(); ++c) {
      std::vector<int> best;
      // A few starts, fewer in a huge component: the work stays linear.
      size_t tries = 0, most = comps[c].size() > 10000 ? 2 : 16;
      for (int v : comps[c]) {
        if (nodes_[v].op < 0) continue;
        if (tries++ == most) break;
        std::vector<int> cyc = CycleThrough(v, static_cast<int>(c));
        if (!cyc.empty() && (best.empty() || cyc.size() < best.size())) best = std::move(cyc);
      }
      if (best.empty()) best = graph_.WitnessCycle(comps[c]);
      found.push_back(Explain(best, behind[c]));
    }
    std::stable_sort(found.begin(), found.end(), [](const Finding& a, const Finding& b) {
      return a.cycle.size() + a.blocked_behind.size() > b.cycle.size() + b.blocked_behind.size();
    });
    for (auto& f : found) out_.findings.push_back(std::move(f));
  }

  // ---- words -------------------------------------------------------------
  std::string QueueWords(int32_t r, const std::string& stream) const {
    std::string rank = std::to_string(job_.ranks[r].rank);
    return job_.queue_mode == QueueMode::kPerStream ? "the task queue of stream " + stream + " of rank " + rank
                                                    : "the per-device task queue of rank " + rank;
  }
  // Where an op is: "at position 2 of stream comm of rank 0", ...
  std::string Position(OpId op) const {
    const Where& w = where_[op];
    const DevOp& o = job_.ops[op];
    switch (w.place) {
      case Where::kStream:
        return "at position " + std::to_string(w.pos);
      case Where::kQueue:
        return "(queued, not yet on the stream)";
      case Where::kPending:
        return "(not yet issued)";
      case Where::kNowhere:
        return o.kind == OpKind::kHostSync ? "(blocking its thread)" : "(issued)";
    }
    return "";
  }
  std::string Place(OpId op) const {
    const DevOp& o = job_.ops[op];
    const Where& w = where_[op];
    std::string rank = "rank " + std::to_string(o.rank);
    switch (w.place) {
      case Where::kStream:
        return "on stream " + o.stream + " of " + rank + " at position " + std::to_string(w.pos);
      case Where::kQueue:
        return "in " + QueueWords(w.rank, o.stream) + " at position " + std::to_string(w.pos);
      case Where::kPending:
        return "not yet issued by thread " + o.thread + " of " + rank;
      case Where::kNowhere:
        return o.kind == OpKind::kHostSync ? "blocking thread " + o.thread + " of " + rank : "issued on " + rank;
    }
    return rank;
  }
  std::string D(OpId op) const { return DescribeDevOp(job_.ops[op]); }
  std::string DR(OpId op) const { return D(op) + " on rank " + std::to_string(job_.ops[op].rank); }

  // One step of a chain: waiter `w` cannot go on until `x` does, for `why`
  // (through special node `via`, or -1).
  std::string Say(OpId w, OpId x, Why why, int via) const {
    const DevOp& a = job_.ops[w];
    const DevOp& b = job_.ops[x];
    std::string rank = "rank " + std::to_string(a.rank);
    switch (why) {
      case Why::kThreadOrder:
        return "thread " + a.thread + " of " + rank + " issues in order: " + D(w) + " comes after " + D(x);
      case Why::kThreadHostBlock:
        return "thread " + a.thread + " of " + rank + " issues " + D(w) + " only once " + D(x) +
               (b.kind == OpKind::kHostSync ? " returns" : " (host-blocking) has finished");
      case Why::kThreadBlockedOn:
        return "thread " + a.thread + " of " + rank + " is blocked on " + D(x) + " (" + Place(x) + ")" +
               " and has not issued " + D(w);
      case Why::kQueueOrder:
        return QueueWords(where_[w].rank >= 0 ? where_[w].rank : 0, a.stream) + " dispatches in order: " + D(w) + " " +
               Position(w) + " is behind " + D(x);
      case Why::kQueueHostBlock:
        return QueueWords(where_[w].rank >= 0 ? where_[w].rank : 0, a.stream) + " dispatches in order: " + D(w) +
               " is behind " + D(x) + " (host-blocking), whose dispatcher waits until it finishes";
      case Why::kQueueDispatching:
        return QueueWords(where_[w].rank >= 0 ? where_[w].rank : 0, a.stream) + " is blocked dispatching " + D(x) +
               " (host-blocking) until it finishes; " + D(w) + " waits behind it";
      case Why::kStreamOrder:
        return "stream " + a.stream + " of " + rank + " runs in order: " + D(w) + " " + Position(w) + " is behind " +
               D(x) + " " + Position(x);
      case Why::kStreamDrain:
        return D(w) + " on " + rank + " waits for stream " + a.stream + " to drain, down to " + D(x) + " " +
               Position(x);
      case Why::kPoolNeed:
      case Why::kPoolHeld: {
        const Special& s = specials_[nodes_[via].special];
        std::vector<std::string> names;
        for (OpId h : s.ops) names.push_back(D(h));
        return s.label + " is held by " + Join(names, 4) + "; " + D(w) + " " + Position(w) + " needs a unit, which " +
               D(x) + " frees only when it finishes";
      }
      case Why::kEvent:
        return D(w) + " on stream " + (a.stream.empty() ? "(host)" : a.stream) + " of " + rank + " needs event " +
               a.event + ", recorded by " + D(x) + " " + Place(x);
      case Why::kCollectiveNeed:
      case Why::kCollectiveMember:
        return DR(w) + " needs rank " + std::to_string(b.rank) + " to start its " + D(x) + " (" + Place(x) + ")";
      case Why::kP2p:
        return DR(w) + " needs rank " + std::to_string(b.rank) + " to start its " + D(x) + " (" + Place(x) + ")";
      case Why::kAnySource:
        return DR(w) + " needs " + (via >= 0 ? specials_[nodes_[via].special].label : D(x)) + " to start, e.g. " +
               DR(x) + " (" + Place(x) + ")";
      case Why::kSameOp:
      case Why::kMissing:
        break;
    }
    return DR(w) + " waits for " + DR(x);
  }
  static std::string Join(const std::vector<std::string>& items, size_t most) {
    std::string s;
    for (size_t i = 0; i < items.size() && i < most; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > most) s += " and " + std::to_string(items.size() - most) + " more";
    return s;
  }

  // Evidence for the first 8 of `ops`: the file, the op's JSON path, what
  // and where it is.
  void AddEvidence(const std::vector<OpId>& ops, Finding* f) const {
    for (size_t i = 0; i < ops.size() && i < 8; ++i) {
      const DevOp& o = job_.ops[ops[i]];
      Evidence e;
      e.file = job_.origin.empty() ? o.source : job_.origin;
      e.rank = o.rank;
      e.note = (o.source.empty() ? "" : o.source + ": ") + D(ops[i]) + " " + Place(ops[i]);
      f->evidence.push_back(std::move(e));
    }
  }

  // What a witness cycle is made of: its steps (a run of nodes of one op is
  // one step; special nodes -- hubs, pools, OR nodes -- sit between steps),
  // the OR and k-of-n nodes on it, and which kinds of wait it goes through.
  struct StepOut {
    OpId op;
    Why why;
    int via;
  };
  struct CycleParts {
    std::vector<StepOut> steps;
    std::vector<int> knots;  // pool and OR nodes on the cycle
    bool queue = false, pool = false, event = false, other = false;
    int32_t queue_rank = -1;    // the rank of the first task-queue step
    int pool_node = -1;         // the first pool node
    std::vector<OpId> ops;      // the op of each step
    std::set<std::string> pgs;  // pgs of its collectives and P2P ops
    bool only_p2p = true, any_coll = false;
  };

  // Rotates `cycle` so that it starts at the first node of the step with
  // the lowest (rank, op id): the same deadlock always reads the same way.
  void RotateToLowest(std::vector<int>* cycle) const {
    const size_t len = cycle->size();
    size_t start = 0;
    std::pair<model::Rank, OpId> best{INT64_MAX, INT32_MAX};
    for (size_t i = 0; i < len; ++i) {
      OpId op = nodes_[(*cycle)[i]].op;
      OpId before = nodes_[(*cycle)[(i + len - 1) % len]].op;
      if (op < 0 || op == before) continue;
      std::pair<model::Rank, OpId> key{job_.ops[op].rank, op};
      if (key < best) {
        best = key;
        start = i;
      }
    }
    std::rotate(cycle->begin(), cycle->begin() + static_cast<std::ptrdiff_t>(start), cycle->end());
  }

  // Notes which kind of wait the edge v -> w (reason `why`) is.
  void NoteWait(int v, int w, Why why, CycleParts* p) const {
    OpId owner = nodes_[v].op;
    switch (why) {
      case Why::kQueueOrder:
      case Why::kQueueHostBlock:
      case Why::kQueueDispatching:
        p->queue = true;
        if (p->queue_rank < 0 && owner >= 0) p->queue_rank = static_cast<int32_t>(job_.ops[owner].rank);
        break;
      case Why::kPoolNeed:
      case Why::kPoolHeld:
        p->pool = true;
        if (p->pool_node < 0) p->pool_node = owner < 0 ? v : w;
        break;
      case Why::kEvent:
        p->event = true;
        break;
      case Why::kThreadHostBlock:
      case Why::kThreadBlockedOn:
      case Why::kStreamDrain:
        p->other = true;
        break;
      default:
        break;
    }
  }

  CycleParts PartsOf(const std::vector<int>& cycle) const {
    CycleParts p;
    const size_t len = cycle.size();
    auto owner = [&](int v) { return nodes_[v].op; };
    for (size_t i = 0; i < len; ++i) {
      int v = cycle[i], w = cycle[(i + 1) % len];
      Why why = WhyOf(v, w);
      NoteWait(v, w, why, &p);
      if (owner(v) < 0) {
        const Special& s = specials_[nodes_[v].special];
        if (s.type == Special::Type::kPool || s.type == Special::Type::kOr) p.knots.push_back(v);
        continue;
      }
      if (owner(w) == owner(v)) continue;
      if (owner(w) >= 0) {
        p.steps.push_back({owner(v), why, -1});
        continue;
      }
      // Through a special node to the next op.
      Why via_why = why == Why::kCollectiveNeed ? Why::kCollectiveMember : why;
      if (why == Why::kEvent || why == Why::kAnySource) via_why = why;
      p.steps.push_back({owner(v), via_why, w});
    }
    for (const auto& s : p.steps) {
      p.ops.push_back(s.op);
      const DevOp& o = job_.ops[s.op];
      if (o.kind == OpKind::kCollective) p.any_coll = true;
      if (o.kind == OpKind::kCollective || o.kind == OpKind::kSend || o.kind == OpKind::kRecv) p.pgs.insert(o.pg);
      if (o.kind != OpKind::kSend && o.kind != OpKind::kRecv) p.only_p2p = false;
    }
    return p;
  }

  // The kind of deadlock, by what the cycle goes through: a task queue
  // first, then a pool (but one unit shared by collectives of two pgs is an
  // order inversion), pgs issued in different orders, events, P2P ops.
  Kind CycleKind(const CycleParts& p) const {
    int pool_capacity = 0;
    if (p.pool_node >= 0) {
      const Special& ps = specials_[nodes_[p.pool_node].special];
      pool_capacity = static_cast<int>(ps.ops.size()) - k_[p.pool_node] + 1;
    }
    bool across_pgs = p.pgs.size() >= 2 && p.any_coll;
    if (p.queue) return Kind::kTaskQueueDeadlock;
    if (p.pool && !(pool_capacity == 1 && across_pgs)) return Kind::kResourceDeadlock;
    if (across_pgs) return Kind::kOrderInversion;
    if (p.event) return Kind::kStreamCycle;
    if (p.only_p2p && !p.other) return Kind::kP2pCycle;
    return Kind::kWaitCycle;
  }

  // Ranks in wait order, the one to look at first (the queue's or the
  // pool's rank), the ranks of the ops blocked behind, and pg, seq and op.
  void FillRanks(const CycleParts& p, const std::vector<OpId>& behind, Finding* f) const {
    for (OpId op : p.ops) {
      model::Rank r = job_.ops[op].rank;
      if (f->cycle.empty() || f->cycle.back() != r) f->cycle.push_back(r);
    }
    if (f->cycle.size() > 1 && f->cycle.front() == f->cycle.back()) f->cycle.pop_back();
    std::vector<model::Rank> ranks(f->cycle);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    model::Rank first = f->kind == Kind::kTaskQueueDeadlock  ? p.queue_rank
                        : f->kind == Kind::kResourceDeadlock ? specials_[nodes_[p.pool_node].special].rank
                                                             : -1;
    std::set<model::Rank> named;
    if (first >= 0) {
      f->culprit_ranks.push_back(first);
      named.insert(first);
    }
    for (model::Rank r : f->cycle)
      if (named.insert(r).second) f->culprit_ranks.push_back(r);
    f->roles.push_back({"in the cycle", ranks});
    for (OpId op : behind)
      if (!std::binary_search(ranks.begin(), ranks.end(), job_.ops[op].rank))
        f->blocked_behind.push_back(job_.ops[op].rank);
    std::sort(f->blocked_behind.begin(), f->blocked_behind.end());
    f->blocked_behind.erase(std::unique(f->blocked_behind.begin(), f->blocked_behind.end()), f->blocked_behind.end());
    if (p.pgs.size() == 1) f->pg_name = *p.pgs.begin();
    std::set<int64_t> seqs;
    std::vector<std::string> names;
    for (OpId op : p.ops) {
      const DevOp& o = job_.ops[op];
      if (o.kind == OpKind::kCollective) seqs.insert(o.seq);
      if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
    }
    if (p.pgs.size() == 1 && seqs.size() == 1) f->seq = *seqs.begin();
    f->op = Join(names, 8);
  }

  std::string CycleSummary(const CycleParts& p, Kind kind, const std::vector<model::Rank>& ranks) const {
    std::string chain;
    for (size_t i = 0; i < p.ops.size() && i < 4; ++i) chain += (i ? " -> " : "") + DR(p.ops[i]);
    chain += p.ops.size() > 4 ? " -> ... (" + std::to_string(p.ops.size()) + " steps)" : " -> back";
    switch (kind) {
      case Kind::kTaskQueueDeadlock:
        if (job_.queue_mode == QueueMode::kPerStream)
          return "the per-stream task queues (task_queue per_stream) dispatch in an order that deadlocks: " + chain;
        return "the per-device task queue of rank " + std::to_string(p.queue_rank) + " (task_queue " +
               model::QueueModeName(job_.queue_mode) +
               ") puts ops of different threads into an order that deadlocks: " + chain;
      case Kind::kResourceDeadlock:
        return specials_[nodes_[p.pool_node].special].label +
               " is held by ops that wait for an op needing a unit: " + chain;
      case Kind::kOrderInversion: {
        std::vector<std::string> pg_list(p.pgs.begin(), p.pgs.end());
        return "pgs " + Join(pg_list, 6) + " are issued in different orders on " + RankWords(ranks) +
               ", a cycle across pgs: " + chain;
      }
      case Kind::kStreamCycle:
        return "streams wait for each other's events in a cycle: " + chain;
      case Kind::kP2pCycle:
        return "P2P ops wait for each other in a cycle: " + chain;
      default:
        return "ops wait for each other in a cycle: " + chain;
    }
  }

  // One line per OR or k-of-n node on the cycle: why none of its ways out
  // can happen.
  std::string KnotDetail(int k) const {
    const Special& s = specials_[nodes_[k].special];
    std::vector<std::string> alts;
    size_t live = 0;
    for (const auto& [x, why] : adj_[k]) {
      if (!dead_[x]) ++live;
      if (nodes_[x].op >= 0) alts.push_back(DR(nodes_[x].op));
    }
    if (s.type == Special::Type::kPool && alts.size() == 1)
      return s.label + " frees a unit only when " + alts[0] + " finishes, and it is deadlocked";
    if (s.type == Special::Type::kPool)
      return s.label + " needs " + std::to_string(k_[k]) + " of its " + std::to_string(alts.size()) +
             " holders to finish and " + (live == 0 ? "none" : "only " + std::to_string(live)) +
             " can: " + Join(alts, 6) + " are all deadlocked";
    return "none of the " + std::to_string(alts.size()) + " ways to " + s.label + " can happen: " + Join(alts, 6) +
           " are all deadlocked";
  }

  // One finding for a witness cycle (node ids, closing back on the first);
  // `behind` are the other ops that cannot finish because of it. Also adds
  // the cycle's rank-level steps to out_.edges.
  Finding Explain(std::vector<int> cycle, const std::vector<OpId>& behind) {
    RotateToLowest(&cycle);
    CycleParts p = PartsOf(cycle);
    Finding f;
    f.severity = Severity::kError;
    f.hang = true;
    f.kind = CycleKind(p);
    FillRanks(p, behind, &f);
    f.summary = CycleSummary(p, f.kind, f.roles.front().ranks);
    // Details: the chain, one line per step, then the knots.
    for (size_t i = 0; i < p.steps.size(); ++i) {
      OpId next = p.steps[(i + 1) % p.steps.size()].op;
      f.details.push_back(Say(p.steps[i].op, next, p.steps[i].why, p.steps[i].via));
    }
    for (int k : p.knots) f.details.push_back(KnotDetail(k));
    if (!behind.empty())
      f.details.push_back(std::to_string(behind.size()) + " more op" + (behind.size() == 1 ? "" : "s") +
                          " cannot finish because of this cycle, e.g. " + DR(behind[0]) + " " + Place(behind[0]));
    AddEvidence(p.ops, &f);
    f.fix_hint = FixHint(f.kind);
    for (size_t i = 0; i < p.ops.size(); ++i) {
      model::Rank a = job_.ops[p.ops[i]].rank, b = job_.ops[p.ops[(i + 1) % p.ops.size()]].rank;
      if (a != b) out_.edges.push_back({a, b, DR(p.ops[i]), true});
    }
    return f;
  }

  // The chain of ops that wait, transitively, for missing node `target`:
  // from the op farthest upstream (longest shortest path; the lowest op id
  // on a tie) down to `target`, one line per step (Say) and a last line for
  // the cause. *ops gets the ops of the chain in order.
  std::vector<std::string> ChainTo(int target, std::vector<OpId>* ops) {
    std::vector<std::vector<std::pair<int, Why>>> rev(nodes_.size());
    for (size_t v = 0; v < nodes_.size(); ++v)
      for (const auto& [w, why] : adj_[v]) rev[w].push_back({static_cast<int>(v), why});
    std::vector<int> next(nodes_.size(), -2), dist(nodes_.size(), -1);
    std::deque<int> q{target};
    dist[target] = 0;
    next[target] = -1;
    int far = -1;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (const auto& [v, why] : rev[u]) {
        if (dist[v] >= 0) continue;
        dist[v] = dist[u] + 1;
        next[v] = u;
        q.push_back(v);
        if (nodes_[v].op >= 0 &&
            (far < 0 || dist[v] > dist[far] || (dist[v] == dist[far] && nodes_[v].op < nodes_[far].op)))
          far = v;
      }
    }
    std::vector<int> path;
    for (int v = far; v >= 0; v = next[v]) path.push_back(v);
    // Steps: a run of nodes of one op is one step; special nodes sit between.
    std::vector<StepOut> steps;
    auto owner = [&](int v) { return nodes_[v].op; };
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      int v = path[i], w = path[i + 1];
      if (owner(v) < 0 || owner(w) == owner(v)) continue;
      Why why = WhyOf(v, w);
      if (owner(w) >= 0) {
        steps.push_back({owner(v), why, -1});
        continue;
      }
      // Through a special node: to the next op on the path, if any.
      int via = w;
      size_t j = i + 1;
      while (j < path.size() && owner(path[j]) < 0) ++j;
      if (j < path.size())
        steps.push_back({owner(v), why == Why::kCollectiveNeed ? Why::kCollectiveMember : why, via});
      else
        steps.push_back({owner(v), Why::kMissing, via});
    }
    std::vector<std::string> lines;
    for (size_t i = 0; i < steps.size(); ++i) {
      ops->push_back(steps[i].op);
      if (steps[i].why == Why::kMissing) continue;
      OpId x = i + 1 < steps.size() ? steps[i + 1].op : steps[i].op;
      lines.push_back(Say(steps[i].op, x, steps[i].why, steps[i].via));
    }
    const Special& s = specials_[nodes_[target].special];
    lines.push_back("cause: " + s.label);
    return lines;
  }

  // Missing node -> the ops that wait for it directly (an op's node, or a
  // collective hub's ops).
  std::map<int, std::vector<OpId>> WaitersOfMissing() const {
    std::map<int, std::vector<OpId>> waiters;
    for (size_t v = 0; v < nodes_.size(); ++v) {
      for (const auto& [w, why] : adj_[v]) {
        if (nodes_[w].special < 0 || specials_[nodes_[w].special].type != Special::Type::kMissing) continue;
        if (nodes_[v].op >= 0) {
          waiters[w].push_back(nodes_[v].op);
        } else if (specials_[nodes_[v].special].type == Special::Type::kHub) {
          for (OpId op : specials_[nodes_[v].special].ops) waiters[w].push_back(op);
        }
      }
    }
    return waiters;
  }

  // A failed task or an event its producer never records (HCCL plogs): the
  // whole chain, from the op farthest upstream down to the cause.
  void ChainFinding(int node, const std::vector<OpId>& live, Finding* f) {
    const Special& s = specials_[nodes_[node].special];
    std::vector<OpId> chain;
    std::vector<std::string> steps = ChainTo(node, &chain);
    f->kind = s.missing == Special::Missing::kFailed ? Kind::kCrashedRank
              : s.rank >= 0                          ? Kind::kMissingRank
                                                     : Kind::kUndecided;
    std::vector<model::Rank> in_chain;
    for (OpId op : chain) in_chain.push_back(job_.ops[op].rank);
    std::string path;
    for (model::Rank r : in_chain)
      if (path.empty() || path.substr(path.rfind(' ') + 1) != std::to_string(r))
        path += (path.empty() ? "rank " : " -> rank ") + std::to_string(r);
    if (s.rank >= 0 && (in_chain.empty() || in_chain.back() != s.rank))
      path += (path.empty() ? "rank " : " -> rank ") + std::to_string(s.rank);
    f->summary =
        (chain.empty() ? DR(live[0]) : DR(chain.front())) + " waits, through " + path + ", for a cause: " + s.label;
    if (s.rank >= 0) f->culprit_ranks = {s.rank};
    std::vector<model::Rank> chain_ranks(in_chain);
    if (s.rank >= 0) chain_ranks.push_back(s.rank);
    std::sort(chain_ranks.begin(), chain_ranks.end());
    chain_ranks.erase(std::unique(chain_ranks.begin(), chain_ranks.end()), chain_ranks.end());
    f->roles.push_back({"chain", chain_ranks});
    if (s.rank >= 0) f->roles.push_back({s.missing == Special::Missing::kFailed ? "failed" : "never sent", {s.rank}});
    for (auto& step : steps) f->details.push_back(std::move(step));
    f->fix_hint = s.missing == Special::Missing::kFailed
                      ? "look at the failed task on " + RankWord(s.rank) +
                            " first (its device log: error code, the operator); the ranks waiting in the chain "
                            "are only its victims"
                      : "find what " + (s.rank >= 0 ? RankWord(s.rank) : std::string("that rank")) +
                            " is doing instead (still computing, in another collective, dead): get its log";
    AddEvidence(chain.empty() ? live : chain, f);
  }

  // An op, an event or a rank that is nowhere in the job, and the ops
  // `live` (not deadlocked) that wait for it.
  void MissingFinding(int node, const std::vector<OpId>& live, Finding* f) const {
    const Special& s = specials_[nodes_[node].special];
    std::vector<model::Rank> ranks;
    for (OpId op : live) ranks.push_back(job_.ops[op].rank);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    const DevOp& o = job_.ops[live[0]];
    switch (s.missing) {
      case Special::Missing::kEvent:
        f->kind = Kind::kUndecided;
        f->summary = DR(live[0]) + " waits for " + s.label +
                     (live.size() > 1 ? " (and " + std::to_string(live.size() - 1) + " more ops wait for it)" : "") +
                     ": nothing in this snapshot will ever record it";
        f->culprit_ranks = ranks;
        f->roles.push_back({"waiting", ranks});
        f->fix_hint = "record event " + o.event +
                      " before (or on another stream than) the wait, or check that its "
                      "producer was issued";
        break;
      case Special::Missing::kNoData:
        f->kind = Kind::kUndecided;
        f->summary = RankWords(ranks) + (ranks.size() == 1 ? " waits for " : " wait for ") + RankWord(s.rank) +
                     ", which has no data in this snapshot";
        f->culprit_ranks = {s.rank};
        f->roles.push_back({"waiting", ranks});
        f->roles.push_back({"no data", {s.rank}});
        break;
      default:
        f->kind = Kind::kMissingRank;
        f->summary = s.label + "; " + RankWords(ranks) + " " + (ranks.size() == 1 ? "waits" : "wait") + " for it in " +
                     D(live[0]);
        if (s.rank >= 0) f->culprit_ranks = {s.rank};
        f->roles.push_back({"arrived", ranks});
        if (s.rank >= 0) f->roles.push_back({"missing", {s.rank}});
        f->fix_hint = s.rank >= 0 ? "make " + RankWord(s.rank) + " issue the op its peers wait for, in the same order"
                                  : "find which rank should send to " + RankWords(ranks) + " on " + s.pg;
        break;
    }
    f->details.push_back(s.label + ".");
    if (s.rank >= 0 && s.missing != Special::Missing::kNoData) f->details.push_back(Instead(s.rank));
    AddEvidence(live, f);
  }

  // Findings for ops that wait for something nobody will ever issue (at
  // most 32, then one line for the rest).
  void MissingFindings() {
    std::set<OpId> on_missing;
    size_t emitted = 0, more = 0;
    for (auto& [node, ops] : WaitersOfMissing()) {
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      std::vector<OpId> live;
      for (OpId op : ops)
        if (!dead_[f_[op]]) live.push_back(op);
      if (live.empty()) continue;
      on_missing.insert(live.begin(), live.end());
      if (emitted == 32) {
        ++more;
        continue;
      }
      ++emitted;
      const Special& s = specials_[nodes_[node].special];
      Finding f;
      f.severity = Severity::kError;
      f.hang = true;
      f.op = job_.ops[live[0]].name;
      f.pg_name = s.pg;
      if (s.missing == Special::Missing::kCollective) f.seq = s.seq;
      if (s.missing == Special::Missing::kFailed || s.missing == Special::Missing::kProducer)
        ChainFinding(node, live, &f);
      else
        MissingFinding(node, live, &f);
      out_.findings.push_back(std::move(f));
    }
    if (more > 0) {
      Finding f;
      f.kind = Kind::kUndecided;
      f.summary = std::to_string(more) + " more ops wait for ops that are nowhere in this snapshot (not listed)";
      out_.findings.push_back(std::move(f));
    }
    out_.waiting_on_missing.assign(on_missing.begin(), on_missing.end());
  }

  // Where rank `r` is instead: its threads and stream heads.
  std::string Instead(model::Rank r) const {
    const model::DeviceRank* dr = job_.FindRank(r);
    if (!dr) return RankWord(r) + " has no data";
    std::vector<std::string> parts;
    for (const auto& t : dr->threads) {
      if (Live(t.blocked_on))
        parts.push_back("thread " + t.name + " is blocked on " + D(t.blocked_on));
      else if (!t.pending.empty() && Live(t.pending[0]))
        parts.push_back("thread " + t.name + " has yet to issue " + D(t.pending[0]));
      else
        parts.push_back("thread " + t.name + " has issued everything");
    }
    for (const auto& s : dr->streams)
      if (!s.tasks.empty() && Live(s.tasks[0]))
        parts.push_back("stream " + s.name + " is at " + D(s.tasks[0]) + (s.head_started ? " (started)" : ""));
    return RankWord(r) + " instead: " + (parts.empty() ? "nothing in flight" : Join(parts, 6));
  }

  void RankSummaries() {
    std::set<model::Rank> dead, blocked, busy;
    for (OpId op = 0; op < n_; ++op)
      if (Live(op)) busy.insert(job_.ops[op].rank);
    for (OpId op : out_.deadlocked) dead.insert(job_.ops[op].rank);
    for (OpId op : out_.waiting_on_missing) blocked.insert(job_.ops[op].rank);
    for (const auto& dr : job_.ranks) {
      RankSummary s;
      s.rank = dr.rank;
      s.file = job_.origin;
      s.state = dead.count(dr.rank)      ? "deadlocked"
                : blocked.count(dr.rank) ? "blocked"
                : busy.count(dr.rank)    ? "running"
                                         : "idle";
      std::string inst = Instead(dr.rank);
      s.current = inst.substr(inst.find(": ") + 2);
      out_.ranks.push_back(std::move(s));
    }
  }

  void ScheduleNote() {
    bool issued = false;
    for (OpId op = 0; op < n_ && !issued; ++op) issued = Finished(op) || where_[op].place != Where::kPending;
    for (const auto& dr : job_.ranks)
      for (const auto& t : dr.threads) issued = issued || Live(t.blocked_on);
    out_.schedule = !issued;
    if (!out_.schedule) return;
    Finding f;
    f.kind = Kind::kUndecided;
    f.severity = Severity::kInfo;
    f.hang = false;
    std::string name = job_.origin.empty() ? "this input" : job_.origin;
    f.summary = name +
                " is a schedule (programs only, nothing issued), not a snapshot: analyze reports only what "
                "deadlocks whatever the interleaving; run `hangdx simulate " +
                name + "` to explore the interleavings";
    f.fix_hint = "hangdx simulate " + name;
    out_.findings.push_back(std::move(f));
  }

  const model::DeviceJob& job_;
  const OpId n_;
  DeviceAnalysis out_;
  std::vector<Where> where_;
  std::vector<int> q_, i_, s_, f_;
  std::vector<NodeKind> kinds_;
  std::vector<int> k_;
  std::vector<Node> nodes_;
  std::vector<Special> specials_;
  std::vector<std::vector<std::pair<int, Why>>> adj_;
  WaitGraph graph_;
  std::vector<bool> dead_;
  std::vector<int> comp_of_;
  std::vector<int> parent_;  // BFS scratch, -2 = unseen
  // Indexes.
  std::set<std::string> recorded_;
  std::map<std::string, std::vector<OpId>> records_;
  std::map<std::tuple<std::string, model::Rank, int64_t>, OpId> coll_;
  std::map<std::pair<std::string, model::Rank>, int64_t> coll_max_;
  std::map<std::tuple<std::string, model::Rank, model::Rank, int64_t>, OpId> sends_, recvs_;
  std::map<std::tuple<std::string, model::Rank, model::Rank>, int64_t> send_max_, recv_max_;
  std::map<std::pair<std::string, model::Rank>, std::vector<OpId>> sends_to_, any_recvs_;
  std::map<std::pair<int32_t, std::string>, int32_t> pool_of_;
  std::map<std::pair<int32_t, std::string>, int> pool_node_;
  std::map<std::string, int> missing_, event_node_;
  std::map<std::pair<std::string, int64_t>, int> hub_;
  std::map<std::pair<std::string, model::Rank>, int> any_send_node_;
};

}  // namespace

std::string DescribeDevOp(const DevOp& op) {
  std::string seq = op.seq >= 0 ? std::to_string(op.seq) : "?";
  switch (op.kind) {
    case OpKind::kCollective:
      return op.name + " " + op.pg + " seq " + seq;
    case OpKind::kSend:
      return "send to rank " + std::to_string(op.peer) + " on " + op.pg + " #" + seq;
    case OpKind::kRecv:
      return (op.peer < 0 ? std::string("recv from any rank") : "recv from rank " + std::to_string(op.peer)) + " on " +
             op.pg + " #" + seq;
    case OpKind::kRecord:
    case OpKind::kWait:
    case OpKind::kHostSync: {
      const std::string& target = op.event.empty() ? op.stream : op.event;
      if (op.name.empty()) return std::string(model::DevOpKindName(op.kind)) + " " + target;
      return op.name.find(target) == std::string::npos ? op.name + " " + target : op.name;
    }
    case OpKind::kCompute:
      break;
  }
  return op.name.empty() ? "compute" : op.name;
}

DeviceAnalysis AnalyzeDevice(const model::DeviceJob& job) { return DeviceGraph(job).Run(); }

std::vector<std::string> ExplainDevice(const model::DeviceJob& job) {
  std::vector<std::string> lines;
  for (const Finding& f : AnalyzeDevice(job).findings) {
    if (f.severity == Severity::kInfo) continue;
    lines.push_back(std::string(KindName(f.kind)) + ": " + f.summary);
    for (const auto& d : f.details) lines.push_back("  " + d);
    if (!f.fix_hint.empty()) lines.push_back("  fix: " + f.fix_hint);
  }
  return lines;
}

}  // namespace hangdx::analyze
