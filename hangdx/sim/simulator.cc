#include "hangdx/sim/simulator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "hangdx/sim/candidates.h"

namespace hangdx::sim {
namespace {

using model::DevOp;
using model::OpId;
using model::QueueMode;
using model::Rank;
using OpKind = DevOp::Kind;

// Where an op is (the op status word of a state).
enum : int32_t { kPending = 0, kIssued = 1, kOnStream = 2, kStarted = 3, kFinished = 4 };

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer: a bijection with good avalanche
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The dynamic part of a job: fixed-layout int32 words (the layout is the
// Program's) with two incremental Zobrist-style 64-bit hashes, so a
// transition rehashes only the words it changes.
class State {
 public:
  explicit State(size_t n) : w_(n, 0) {
    for (size_t i = 0; i < n; ++i) {
      h1_ ^= H(kSeed1, i, 0);
      h2_ ^= H(kSeed2, i, 0);
    }
  }
  int32_t operator[](size_t i) const { return w_[i]; }
  void Set(size_t i, int32_t v) {
    int32_t old = w_[i];
    if (old == v) return;
    h1_ ^= H(kSeed1, i, old) ^ H(kSeed1, i, v);
    h2_ ^= H(kSeed2, i, old) ^ H(kSeed2, i, v);
    w_[i] = v;
    if (trail_) trail_->push_back({static_cast<int32_t>(i), old});
  }
  uint64_t h1() const { return h1_; }
  uint64_t h2() const { return h2_; }
  // With a trail, every Set records (word, old value) so that Undo can take
  // the state back: the search keeps one state and undoes instead of copying.
  using Trail = std::vector<std::pair<int32_t, int32_t>>;
  void SetTrail(Trail* t) { trail_ = t; }
  void Undo(size_t len) {
    Trail* t = trail_;
    trail_ = nullptr;
    while (t->size() > len) {
      Set(static_cast<size_t>(t->back().first), t->back().second);
      t->pop_back();
    }
    trail_ = t;
  }

 private:
  static constexpr uint64_t kSeed1 = 0x243f6a8885a308d3ULL, kSeed2 = 0x13198a2e03707344ULL;
  static uint64_t H(uint64_t seed, size_t i, int32_t v) {
    return Mix(seed ^ ((static_cast<uint64_t>(i) << 32) | static_cast<uint32_t>(v)));
  }
  std::vector<int32_t> w_;
  uint64_t h1_ = 0, h2_ = 0;
  Trail* trail_ = nullptr;
};

// Visited states by their 128-bit hash: open addressing, linear probing.
class VisitedSet {
 public:
  VisitedSet() : slots_(1 << 12) {}
  // Inserts; returns false when the state was there already.
  bool Insert(uint64_t a, uint64_t b) {
    if (a == 0 && b == 0) b = 1;  // (0, 0) marks an empty slot
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    return Put(a, b);
  }
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.size() * sizeof(slots_[0]); }
  // What the next Insert of a new state may take: twice the table when it grows.
  size_t BytesAfterInsert() const { return (size_ + 1) * 2 > slots_.size() ? 2 * bytes() : bytes(); }

 private:
  bool Put(uint64_t a, uint64_t b) {
    size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(a ^ (b >> 7)) & mask;; i = (i + 1) & mask) {
      auto& s = slots_[i];
      if (s.first == 0 && s.second == 0) {
        s = {a, b};
        ++size_;
        return true;
      }
      if (s.first == a && s.second == b) return false;
    }
  }
  void Grow() {
    std::vector<std::pair<uint64_t, uint64_t>> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const auto& s : old) {
      if (s.first != 0 || s.second != 0) Put(s.first, s.second);
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> slots_;
  size_t size_ = 0;
};

// A counter table: `count` then `cap` slots, the op that took each seq.
struct Table {
  int32_t word = 0;
  int32_t cap = 0;
};

struct AnySender {          // an any-source recv's candidate sender
  int32_t rank = -1;        // rank index of the sender
  int32_t send_table = -1;  // (pg, sender, receiver) sends
  int32_t recv_table = -1;  // (pg, sender, receiver) recvs
};

struct COp {
  OpKind kind = OpKind::kCompute;
  int32_t rank = -1;    // rank index
  int32_t thread = -1;  // global thread index of its issuer; -1 when placed, not in a program
  int32_t stream = -1;  // global stream index; -1 for host_sync on an event
  int32_t queue = -1;   // global queue index (queue modes), -1 none
  int32_t event = -1;
  int32_t pool = -1;
  int32_t pg = -1;
  int32_t peer = -1;  // rank index; -1 any source; -2 not a rank of the job
  bool blocking = false;
  bool failed = false;             // the device reported it failed: once started it never finishes
  int32_t table = -1;              // the table it takes its seq from (collective, send, named recv)
  int32_t partner_table = -1;      // send: recvs (pg, a, b); named recv: sends (pg, a, b)
  std::vector<AnySender> senders;  // any-source recv
};

struct ThreadInfo {
  int32_t rank = -1;
  int32_t job_index = 0;  // index in DeviceRank::threads
  std::string name;
  std::vector<OpId> program;
  int32_t word = 0;  // [pc, blocked_on]
  // Conflict keys this thread's program uses: key -> last position that
  // writes it, last that reads it (-1 none). See IssueSafe.
  std::unordered_map<int32_t, std::pair<int32_t, int32_t>> last_use;
  std::vector<std::array<int32_t, 3>> uses;  // last_use as a list: key, last write, last read
  bool shares_rank = false;                  // its rank has other threads (only then can its issues conflict)
};

struct StreamInfo {
  int32_t rank = -1;
  std::string name;
  int32_t cap = 0;
  int32_t word = 0;  // [head, tail, head_started, slots...]
};

struct QueueInfo {
  int32_t rank = -1;
  std::string name;  // "device" or the stream's name
  int32_t cap = 0;
  int32_t word = 0;  // [head, tail, dispatching, slots...]
};

struct PoolInfo {
  int32_t rank = -1;
  std::string name;
  int32_t capacity = 1;
  int32_t total = 0;  // ops that use it
  int32_t word = 0;   // [holders, done]
};

struct Trans {
  Step::Kind kind = Step::Kind::kIssue;
  int32_t idx = -1;  // thread, queue or stream
  int32_t arg = -1;  // kFinish of an any-source recv: index into its senders
};

// Members or holders named in one line of Blocked; the rest are counted.
constexpr int32_t kMaxNamed = 8;

// The static part: the program compiled to indices, the state layout, and
// the names for reports.
struct CompileContext;

class Program {
 public:
  // Compiles `job` (see Explore for the errors); call once.
  Status Compile(const model::DeviceJob& job);
  State Initial() const { return initial_; }
  int64_t Words() const { return words_; }

  // Fills `out` with every enabled transition of `s` (no reduction).
  void AllEnabled(const State& s, std::vector<Trans>* out, int64_t* examined) const;
  // Fills `out` with the transitions to explore from `s` with partial-order
  // reduction: one safe transition when there is one, else every enabled
  // transition; the same list, in the same order, as a scan of every part
  // of the job would give. Looks only at the members of `c` (which must
  // hold every stream, queue and thread that can move, see candidates.h)
  // and drops those it finds cannot. Adds what it looked at to `examined`.
  void Reduced(const State& s, Candidates* c, std::vector<Trans>* out, int64_t* examined) const;
  // After a transition changed the words of `s` that `trail` lists from
  // `from` on: adds to `c` every part of the job that the change may have
  // let move.
  void Touch(const State& s, const State::Trail& trail, size_t from, Candidates* c) const;
  Candidates NewCandidates() const { return Candidates(streams_.size(), queues_.size(), threads_.size()); }
  void Apply(State* s, const Trans& t) const;
  bool Finished(const State& s) const;  // nothing left anywhere
  std::string Describe(const State& before, const State& after, const Trans& t) const;
  Step MakeStep(const State& before, const State& after, const Trans& t) const;
  model::DeviceJob ToDeviceJob(const State& s) const;
  std::vector<std::string> Blocked(const State& s) const;

 private:
  // State words.
  int32_t OpWord(OpId o) const { return 3 * o; }  // [status, seq, aux]
  int32_t OpStatus(const State& s, OpId o) const { return s[OpWord(o)]; }
  int32_t Seq(const State& s, OpId o) const { return s[OpWord(o) + 1]; }
  int32_t Aux(const State& s, OpId o) const { return s[OpWord(o) + 2]; }
  int32_t TableOp(const State& s, int32_t table, int32_t seq) const {
    const Table& t = tables_[table];
    return seq >= 0 && seq < s[t.word] ? s[t.word + 1 + seq] : -1;
  }
  bool Started(const State& s, OpId o) const { return o >= 0 && OpStatus(s, o) >= kStarted; }
  OpId StreamHead(const State& s, int32_t st) const {
    const StreamInfo& si = streams_[st];
    return s[si.word] < s[si.word + 1] ? s[si.word + 3 + s[si.word]] : -1;
  }

  // Steps of Compile, in order.
  Status IndexRanksAndPgs(CompileContext* cx);
  Status PlaceOps(CompileContext* cx);
  Status MarkFinished(CompileContext* cx);
  Status ResolveOp(CompileContext* cx, size_t i);
  void MakeQueues(const CompileContext& cx);
  void MakeTables(CompileContext* cx);
  void MakePgCounts(CompileContext* cx);
  Status Layout(const CompileContext& cx);
  void MakeConflictKeys();
  void MakeTriggers();
  Status MakeInitial(CompileContext* cx);
  Status InitialStreams(CompileContext* cx, State* s);
  Status InitialQueues(CompileContext* cx, State* s);
  Status InitialThreads(CompileContext* cx, State* s);
  int32_t EventOf(CompileContext* cx, const std::string& e);
  int32_t StreamOf(CompileContext* cx, int32_t r, const std::string& name);
  Status Place(CompileContext* cx, OpId id, uint8_t where, int32_t r, const std::string& what);
  int32_t NewTable(int32_t cap);
  int32_t TakeSeq(State* s, int32_t table, OpId o) const;
  void AppendStream(State* s, int32_t st, OpId o) const;
  void FinishOp(State* s, OpId o) const;
  bool FinishCond(const State& s, OpId o) const;
  bool AnySenderReady(const State& s, OpId o, const AnySender& a) const;
  void AnySourceFinishes(const State& s, int32_t st, OpId h, std::vector<Trans>* out) const;
  bool SyncCond(const State& s, OpId o) const;
  bool IssueSafe(const State& s, int32_t thread) const;
  void CountUses(const State& s, int32_t rank) const;
  void ClearUses() const;
  void CountStart(State* s, OpId o) const;
  void TouchOp(const State& s, OpId o, Candidates* c) const;
  void TouchWord(const State& s, int32_t w, int32_t old, Candidates* c) const;
  OpId LastDestined(const State& s, int32_t stream) const;
  DevOp Labeled(const State& s, OpId o) const;  // the DevOp with its current seq
  std::string Label(const State& s, OpId o) const;
  std::string Where(const State& s, OpId o) const;
  std::string QueueName(int32_t q) const;  // "device queue", "queue of stream comm"
  std::string QueueLabel(int32_t q) const { return "the " + QueueName(q); }
  std::string RankName(int32_t r) const { return "rank " + std::to_string(rank_of_[r]); }

  const model::DeviceJob* job_ = nullptr;
  QueueMode mode_ = QueueMode::kOff;
  std::vector<COp> ops_;
  std::vector<Rank> rank_of_;
  std::vector<std::vector<int32_t>> rank_threads_;  // per rank index: global thread indices
  std::vector<ThreadInfo> threads_;
  std::vector<StreamInfo> streams_;
  std::vector<QueueInfo> queues_;
  std::vector<PoolInfo> pools_;
  std::vector<std::string> events_;
  int32_t event_word_ = 0;
  std::vector<Table> tables_;
  std::vector<std::string> pg_names_;
  std::vector<std::vector<int32_t>> pg_member_tables_;  // per pg: per member, its collective table (-1 none)
  // A collective finishes when every member's op of its seq has started.
  // Per pg: whether every member has a collective table (else none ever
  // finishes), how many distinct members there are, and the first of the
  // per-seq words counting the members whose op of that seq has started
  // (-1: no collectives). The counts are a function of the op words, so
  // they do not change what a state is; they make the check O(1).
  std::vector<bool> pg_ready_;
  std::vector<int32_t> pg_need_, pg_count_word_;
  std::vector<std::vector<int32_t>> rank_queues_;  // per rank index: its queues
  // Scratch of IssueSafe (CountUses): per conflict key, how many threads
  // will still use it, and write it; the keys touched.
  mutable std::vector<int32_t> key_users_, key_writers_, key_touched_;
  std::map<std::pair<int32_t, int32_t>, std::vector<OpId>> anysource_;  // (rank, pg) -> any-source recvs
  int32_t words_ = 0;
  State initial_{0};
  // What Touch needs: where each region of the state's words starts (in
  // layout order), and per pool, event and stream the parts of the job
  // whose transitions read it.
  int32_t thread_word0_ = 0, queue_word0_ = 0, stream_word0_ = 0, pool_word0_ = 0, table_word0_ = 0, count_word0_ = 0;
  std::vector<int32_t> queue_words_, stream_words_;     // first word of each queue, stream
  std::vector<std::pair<int32_t, int32_t>> count_pgs_;  // (first count word, pg), ascending
  std::vector<std::vector<int32_t>> pool_streams_;      // per pool: streams with an op that needs it
  std::vector<std::vector<int32_t>> event_waiters_;     // per event: streams with a wait for it
  std::vector<std::vector<int32_t>> event_syncs_;       // per event: threads with a host_sync on it
  std::vector<std::vector<int32_t>> stream_syncs_;      // per stream: threads with a host_sync on it
};

int32_t Program::NewTable(int32_t cap) {
  tables_.push_back({0, cap});
  return static_cast<int32_t>(tables_.size() - 1);
}

std::string OpWhere(const model::DevOp& op, OpId id) {
  std::string s = "op " + std::to_string(id);
  if (!op.source.empty()) s += " (" + op.source + ")";
  return s;
}

// What the steps of Compile share: the input's names as indices, and where
// the input lists each op.
struct CompileContext {
  explicit CompileContext(const model::DeviceJob& j) : job(j), n(j.ops.size()), placed(n, 0), finished(n, false) {}
  const model::DeviceJob& job;
  size_t n;
  std::map<Rank, int32_t> rank_index;
  std::map<std::string, int32_t> pg_index;
  std::vector<std::vector<Rank>> pg_sorted;  // per pg: its distinct members, sorted
  std::map<std::string, int32_t> event_index;
  std::map<std::pair<int32_t, std::string>, int32_t> stream_index, pool_index;
  // Where each op is listed: 0 nowhere, 1 program, 2 queue, 3 stream.
  std::vector<uint8_t> placed;
  std::vector<bool> finished;  // finished ops of ranks in the job
  // Counter tables: collectives per (rank index, pg); sends and recvs per (pg, a, b).
  std::map<std::pair<int32_t, int32_t>, int32_t> coll_table;
  std::map<std::tuple<int32_t, Rank, Rank>, int32_t> send_table, recv_table;
  std::vector<int32_t> pg_seqs;  // per pg: the most collectives of one member
  // Ops in DeviceJob::Number's order (finished, streams, queues): their seqs are taken in it.
  std::vector<OpId> order;

  bool InRun(size_t i) const { return placed[i] || finished[i]; }
  bool IsMember(int32_t pg, Rank r) const { return std::binary_search(pg_sorted[pg].begin(), pg_sorted[pg].end(), r); }
};

template <typename Map, typename Key>
int32_t FindOr(const Map& m, const Key& k, int32_t none = -1) {
  auto it = m.find(k);
  return it == m.end() ? none : it->second;
}

int32_t Program::EventOf(CompileContext* cx, const std::string& e) {
  auto [it, fresh] = cx->event_index.emplace(e, static_cast<int32_t>(events_.size()));
  if (fresh) events_.push_back(e);
  return it->second;
}

int32_t Program::StreamOf(CompileContext* cx, int32_t r, const std::string& name) {
  auto [it, fresh] = cx->stream_index.emplace(std::make_pair(r, name), static_cast<int32_t>(streams_.size()));
  if (fresh) streams_.push_back({r, name, 0, 0});
  return it->second;
}

Status Program::Place(CompileContext* cx, OpId id, uint8_t where, int32_t r, const std::string& what) {
  if (id < 0 || static_cast<size_t>(id) >= cx->n)
    return InvalidArgument(what + " of " + RankName(r) + " lists op " + std::to_string(id) + ", which does not exist");
  if (cx->placed[id]) return InvalidArgument(OpWhere(cx->job.ops[id], id) + " is listed twice");
  const DevOp& op = cx->job.ops[id];
  if (op.rank != rank_of_[r])
    return InvalidArgument(OpWhere(op, id) + " belongs to rank " + std::to_string(op.rank) + " but is listed by " +
                           RankName(r));
  cx->placed[id] = where;
  ops_[id].rank = r;
  return Status::Ok();
}

Status Program::IndexRanksAndPgs(CompileContext* cx) {
  for (const auto& r : cx->job.ranks) {
    if (!cx->rank_index.emplace(r.rank, static_cast<int32_t>(rank_of_.size())).second)
      return InvalidArgument("rank " + std::to_string(r.rank) + " is listed twice");
    rank_of_.push_back(r.rank);
  }
  rank_threads_.resize(rank_of_.size());
  for (const auto& [name, members] : cx->job.pgs) {
    cx->pg_index[name] = static_cast<int32_t>(pg_names_.size());
    pg_names_.push_back(name);
    std::vector<Rank> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    cx->pg_sorted.push_back(std::move(sorted));
  }
  return Status::Ok();
}

// Pools, streams, queues and threads of each rank, in the input's order.
Status Program::PlaceOps(CompileContext* cx) {
  for (size_t r = 0; r < cx->job.ranks.size(); ++r) {
    const auto& dr = cx->job.ranks[r];
    const int32_t ri = static_cast<int32_t>(r);
    for (const auto& p : dr.pools) {
      if (p.capacity < 0) return InvalidArgument(RankName(ri) + " pool " + p.name + " has a negative capacity");
      if (!cx->pool_index.emplace(std::make_pair(ri, p.name), static_cast<int32_t>(pools_.size())).second)
        return InvalidArgument(RankName(ri) + " pool " + p.name + " is listed twice");
      pools_.push_back({ri, p.name, p.capacity, 0, 0});
    }
    for (const auto& st : dr.streams) {
      StreamOf(cx, ri, st.name);
      for (OpId id : st.tasks) HANGDX_RETURN_IF_ERROR(Place(cx, id, 3, ri, "stream " + st.name));
    }
    for (const auto& q : dr.queues) {
      if (mode_ == QueueMode::kOff && !q.entries.empty())
        return InvalidArgument(RankName(ri) + " queue " + q.name + " holds entries but the task queue mode is off");
      for (OpId id : q.entries) HANGDX_RETURN_IF_ERROR(Place(cx, id, 2, ri, "queue " + q.name));
    }
    for (const auto& t : dr.threads) {
      ThreadInfo ti;
      ti.rank = ri;
      ti.job_index = static_cast<int32_t>(&t - dr.threads.data());
      ti.name = t.name;
      for (OpId id : t.pending) {
        HANGDX_RETURN_IF_ERROR(Place(cx, id, 1, ri, "thread " + t.name));
        ops_[id].thread = static_cast<int32_t>(threads_.size());
        ti.program.push_back(id);
      }
      rank_threads_[ri].push_back(static_cast<int32_t>(threads_.size()));
      threads_.push_back(std::move(ti));
    }
  }
  return Status::Ok();
}

Status Program::MarkFinished(CompileContext* cx) {
  const model::DeviceJob& job = cx->job;
  for (size_t i = 0; i < cx->n && i < job.finished.size(); ++i) {
    if (!job.finished[i]) continue;
    if (cx->placed[i])
      return InvalidArgument(OpWhere(job.ops[i], static_cast<OpId>(i)) + " is finished but still listed");
    auto it = cx->rank_index.find(job.ops[i].rank);
    if (it == cx->rank_index.end()) continue;  // a finished op of a rank we do not have: history only
    cx->finished[i] = true;
    ops_[i].rank = it->second;
  }
  return Status::Ok();
}

// The fields of op i (part of the run) as indices: stream, event, pool, pg, peer.
Status Program::ResolveOp(CompileContext* cx, size_t i) {
  const DevOp& op = cx->job.ops[i];
  COp& c = ops_[i];
  c.kind = op.kind;
  c.blocking = op.host_blocking;
  c.failed = op.failed;
  const int32_t r = c.rank;
  const std::string who = OpWhere(op, static_cast<OpId>(i));
  if (op.kind == OpKind::kHostSync) {
    if (op.event.empty() && op.stream.empty()) return InvalidArgument(who + ": host_sync needs an event or a stream");
    if (cx->placed[i] != 1 && !cx->finished[i])
      return InvalidArgument(who + ": a host_sync never sits on a stream or queue");
    if (!op.event.empty())
      c.event = EventOf(cx, op.event);
    else
      c.stream = StreamOf(cx, r, op.stream);
    return Status::Ok();
  }
  if (op.stream.empty()) return InvalidArgument(who + ": " + DevOpKindName(op.kind) + " needs a stream");
  c.stream = StreamOf(cx, r, op.stream);
  if (op.kind == OpKind::kRecord || op.kind == OpKind::kWait) {
    if (op.event.empty()) return InvalidArgument(who + ": " + DevOpKindName(op.kind) + " needs an event");
    c.event = EventOf(cx, op.event);
  }
  if (!op.pool.empty()) {
    c.pool = FindOr(cx->pool_index, std::make_pair(r, op.pool));
    if (c.pool < 0) return InvalidArgument(who + ": pool " + op.pool + " is not declared on " + RankName(r));
    pools_[c.pool].total++;
  }
  if (op.kind != OpKind::kCollective && op.kind != OpKind::kSend && op.kind != OpKind::kRecv) return Status::Ok();
  c.pg = FindOr(cx->pg_index, op.pg);
  if (c.pg < 0) return InvalidArgument(who + ": pg '" + op.pg + "' is not declared");
  if (!cx->IsMember(c.pg, op.rank))
    return InvalidArgument(who + ": rank " + std::to_string(op.rank) + " is not a member of pg " + op.pg);
  if (op.kind == OpKind::kCollective) return Status::Ok();
  if (op.kind == OpKind::kSend && op.peer < 0) return InvalidArgument(who + ": send needs a peer");
  if (op.peer >= 0 && !cx->IsMember(c.pg, op.peer))
    return InvalidArgument(who + ": peer " + std::to_string(op.peer) + " is not a member of pg " + op.pg);
  if (op.peer == op.rank) return InvalidArgument(who + ": peer is the op's own rank");
  if (op.peer >= 0) c.peer = FindOr(cx->rank_index, op.peer, -2);
  return Status::Ok();
}

// Queues per mode, then every queue-able op's queue, and the slots each
// stream and queue needs.
void Program::MakeQueues(const CompileContext& cx) {
  std::vector<int32_t> device_queue(rank_of_.size(), -1), stream_queue(streams_.size(), -1);
  if (mode_ == QueueMode::kPerDevice) {
    for (size_t r = 0; r < rank_of_.size(); ++r) {
      device_queue[r] = static_cast<int32_t>(queues_.size());
      queues_.push_back({static_cast<int32_t>(r), "device", 0, 0});
    }
  } else if (mode_ == QueueMode::kPerStream) {
    for (size_t s = 0; s < streams_.size(); ++s) {
      stream_queue[s] = static_cast<int32_t>(queues_.size());
      queues_.push_back({streams_[s].rank, streams_[s].name, 0, 0});
    }
  }
  for (size_t i = 0; i < cx.n; ++i) {
    COp& c = ops_[i];
    if (!cx.InRun(i) || c.kind == OpKind::kHostSync) continue;
    streams_[c.stream].cap++;
    if (mode_ == QueueMode::kPerDevice) c.queue = device_queue[c.rank];
    if (mode_ == QueueMode::kPerStream) c.queue = stream_queue[c.stream];
    if (c.queue >= 0) queues_[c.queue].cap++;
  }
  rank_queues_.resize(rank_of_.size());
  for (size_t q = 0; q < queues_.size(); ++q) rank_queues_[queues_[q].rank].push_back(static_cast<int32_t>(q));
}

// Counter tables (collectives per (rank, pg); sends and recvs per (pg, a,
// b)), sized by the ops that take a seq from them, and each op's tables.
void Program::MakeTables(CompileContext* cx) {
  std::map<std::pair<int32_t, int32_t>, int32_t> coll_cap;
  std::map<std::tuple<int32_t, Rank, Rank>, int32_t> send_cap, recv_cap;
  for (size_t i = 0; i < cx->n; ++i) {
    const COp& c = ops_[i];
    if (!cx->InRun(i)) continue;
    const DevOp& op = cx->job.ops[i];
    if (c.kind == OpKind::kCollective) coll_cap[{c.rank, c.pg}]++;
    if (c.kind == OpKind::kSend) send_cap[{c.pg, op.rank, op.peer}]++;
    if (c.kind == OpKind::kRecv && op.peer >= 0) recv_cap[{c.pg, op.peer, op.rank}]++;
    if (c.kind == OpKind::kRecv && op.peer < 0) anysource_[{c.rank, c.pg}].push_back(static_cast<OpId>(i));
  }
  // Any-source recvs may take a seq in any sender's recv table at their rank.
  for (const auto& [key, list] : anysource_) {
    for (const auto& [sk, cap] : send_cap) {
      if (std::get<0>(sk) == key.second && std::get<2>(sk) == rank_of_[key.first])
        recv_cap[sk] += static_cast<int32_t>(list.size());
    }
  }
  for (const auto& [k, cap] : coll_cap) cx->coll_table[k] = NewTable(cap);
  for (const auto& [k, cap] : send_cap) cx->send_table[k] = NewTable(cap);
  for (const auto& [k, cap] : recv_cap) cx->recv_table[k] = NewTable(cap);
  for (size_t i = 0; i < cx->n; ++i) {
    COp& c = ops_[i];
    if (!cx->InRun(i)) continue;
    const DevOp& op = cx->job.ops[i];
    if (c.kind == OpKind::kCollective) c.table = cx->coll_table.at({c.rank, c.pg});
    if (c.kind == OpKind::kSend) {
      c.table = cx->send_table.at({c.pg, op.rank, op.peer});
      c.partner_table = FindOr(cx->recv_table, std::make_tuple(c.pg, op.rank, op.peer));
    }
    if (c.kind == OpKind::kRecv && op.peer >= 0) {
      c.table = cx->recv_table.at({c.pg, op.peer, op.rank});
      c.partner_table = FindOr(cx->send_table, std::make_tuple(c.pg, op.peer, op.rank));
    }
    if (c.kind == OpKind::kRecv && op.peer < 0) {
      for (const auto& [sk, t] : cx->send_table) {
        if (std::get<0>(sk) != c.pg || std::get<2>(sk) != op.rank) continue;
        c.senders.push_back({cx->rank_index.at(std::get<1>(sk)), t, cx->recv_table.at(sk)});
      }
    }
  }
}

// Per pg: each member's collective table, whether every member has one, how
// many distinct members must start a seq, and how many seqs to count.
void Program::MakePgCounts(CompileContext* cx) {
  pg_member_tables_.resize(pg_names_.size());
  pg_ready_.assign(pg_names_.size(), true);
  pg_need_.assign(pg_names_.size(), 0);
  pg_count_word_.assign(pg_names_.size(), -1);
  cx->pg_seqs.assign(pg_names_.size(), 0);
  for (size_t p = 0; p < pg_names_.size(); ++p) {
    for (Rank m : cx->job.pgs.at(pg_names_[p])) {
      auto it = cx->rank_index.find(m);
      int32_t t = it == cx->rank_index.end() ? -1 : FindOr(cx->coll_table, std::make_pair(it->second, int32_t(p)));
      pg_member_tables_[p].push_back(t);
      if (t < 0)
        pg_ready_[p] = false;
      else
        cx->pg_seqs[p] = std::max(cx->pg_seqs[p], tables_[t].cap);
    }
    pg_need_[p] = static_cast<int32_t>(cx->pg_sorted[p].size());
  }
}

// The state's word layout: ops, threads, queues, streams, pools, events,
// tables, per-pg start counts.
Status Program::Layout(const CompileContext& cx) {
  int64_t w = 3 * static_cast<int64_t>(cx.n);
  thread_word0_ = static_cast<int32_t>(w);
  for (auto& t : threads_) {
    t.word = static_cast<int32_t>(w);
    w += 2;
  }
  queue_word0_ = static_cast<int32_t>(std::min<int64_t>(w, INT32_MAX));
  for (auto& q : queues_) {
    q.word = static_cast<int32_t>(w);
    w += 3 + q.cap;
  }
  stream_word0_ = static_cast<int32_t>(std::min<int64_t>(w, INT32_MAX));
  for (auto& s : streams_) {
    s.word = static_cast<int32_t>(w);
    w += 3 + s.cap;
  }
  pool_word0_ = static_cast<int32_t>(std::min<int64_t>(w, INT32_MAX));
  for (auto& p : pools_) {
    p.word = static_cast<int32_t>(w);
    w += 2;
  }
  event_word_ = static_cast<int32_t>(w);
  w += static_cast<int64_t>(events_.size());
  table_word0_ = static_cast<int32_t>(std::min<int64_t>(w, INT32_MAX));
  for (auto& t : tables_) {
    t.word = static_cast<int32_t>(w);
    w += 1 + t.cap;
  }
  count_word0_ = static_cast<int32_t>(std::min<int64_t>(w, INT32_MAX));
  for (size_t p = 0; p < pg_names_.size(); ++p) {
    if (cx.pg_seqs[p] == 0) continue;
    pg_count_word_[p] = static_cast<int32_t>(w);
    w += cx.pg_seqs[p];
  }
  if (w > (int64_t{1} << 28)) return InvalidArgument("the job is too large to simulate");
  words_ = static_cast<int32_t>(w);
  return Status::Ok();
}

// Conflict keys of each thread's program (see IssueSafe).
void Program::MakeConflictKeys() {
  const int32_t qkey = static_cast<int32_t>(streams_.size());
  const int32_t tkey = qkey + static_cast<int32_t>(queues_.size());
  key_users_.assign(static_cast<size_t>(tkey) + tables_.size(), 0);
  key_writers_.assign(key_users_.size(), 0);
  for (auto& t : threads_) {
    t.shares_rank = rank_threads_[t.rank].size() > 1;
    for (int32_t p = 0; p < static_cast<int32_t>(t.program.size()); ++p) {
      const COp& c = ops_[t.program[p]];
      auto write = [&](int32_t k) {
        auto [it, f] = t.last_use.try_emplace(k, -1, -1);
        it->second.first = p;
      };
      if (c.kind == OpKind::kHostSync) {
        if (c.stream >= 0) {
          auto [it, f] = t.last_use.try_emplace(c.stream, -1, -1);
          it->second.second = p;
        }
        continue;
      }
      write(c.stream);
      if (c.queue >= 0) write(qkey + c.queue);
      if (c.table >= 0) write(tkey + c.table);
    }
    for (const auto& [k, last] : t.last_use) t.uses.push_back({k, last.first, last.second});
  }
}

// Which parts of the job read which words (see Touch).
void Program::MakeTriggers() {
  for (const auto& q : queues_) queue_words_.push_back(q.word);
  for (const auto& st : streams_) stream_words_.push_back(st.word);
  for (size_t p = 0; p < pg_count_word_.size(); ++p) {
    if (pg_count_word_[p] >= 0) count_pgs_.push_back({pg_count_word_[p], static_cast<int32_t>(p)});
  }
  std::sort(count_pgs_.begin(), count_pgs_.end());
  pool_streams_.resize(pools_.size());
  event_waiters_.resize(events_.size());
  event_syncs_.resize(events_.size());
  stream_syncs_.resize(streams_.size());
  for (const COp& c : ops_) {
    if (c.rank < 0) continue;
    if (c.pool >= 0 && c.stream >= 0) pool_streams_[c.pool].push_back(c.stream);
    if (c.kind == OpKind::kWait) event_waiters_[c.event].push_back(c.stream);
    if (c.kind == OpKind::kHostSync && c.thread >= 0)
      (c.event >= 0 ? event_syncs_[c.event] : stream_syncs_[c.stream]).push_back(c.thread);
  }
  for (auto* lists : {&pool_streams_, &event_waiters_, &event_syncs_, &stream_syncs_}) {
    for (auto& l : *lists) {
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
    }
  }
}

// The initial state of the finished ops and what sits on streams.
Status Program::InitialStreams(CompileContext* cx, State* s) {
  const model::DeviceJob& job = cx->job;
  for (size_t i = 0; i < cx->n; ++i) {
    if (!cx->finished[i]) continue;
    s->Set(OpWord(static_cast<OpId>(i)), kFinished);
    if (ops_[i].kind == OpKind::kRecord) s->Set(event_word_ + ops_[i].event, 1);
    if (ops_[i].pool >= 0) s->Set(pools_[ops_[i].pool].word + 1, (*s)[pools_[ops_[i].pool].word + 1] + 1);
    cx->order.push_back(static_cast<OpId>(i));
  }
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    for (const auto& st : job.ranks[r].streams) {
      int32_t si = cx->stream_index.at({static_cast<int32_t>(r), st.name});
      for (OpId id : st.tasks) {
        if (ops_[id].stream != si)
          return InvalidArgument(OpWhere(job.ops[id], id) + " sits on stream " + st.name + " but names stream " +
                                 job.ops[id].stream);
        AppendStream(s, si, id);
        cx->order.push_back(id);
      }
      if (!st.head_started || st.tasks.empty()) continue;
      OpId h = st.tasks[0];
      const COp& c = ops_[h];
      s->Set(OpWord(h), kStarted);
      s->Set(streams_[si].word + 2, 1);
      if (c.pool >= 0) {
        const PoolInfo& p = pools_[c.pool];
        if ((*s)[p.word] >= p.capacity)
          return InvalidArgument(RankName(p.rank) + " pool " + p.name + " has more holders than its capacity");
        s->Set(p.word, (*s)[p.word] + 1);
      }
    }
  }
  return Status::Ok();
}

// The initial state of the queues' entries and blocked dispatchers.
Status Program::InitialQueues(CompileContext* cx, State* s) {
  const model::DeviceJob& job = cx->job;
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    for (const auto& q : job.ranks[r].queues) {
      for (OpId id : q.entries) {
        const QueueInfo& qi = queues_[ops_[id].queue];
        s->Set(qi.word + 3 + (*s)[qi.word + 1], id);
        s->Set(qi.word + 1, (*s)[qi.word + 1] + 1);
        s->Set(OpWord(id), kIssued);
        cx->order.push_back(id);
      }
      if (q.dispatching < 0) continue;
      OpId d = q.dispatching;
      if (d >= static_cast<OpId>(cx->n) || cx->placed[d] != 3 || !job.ops[d].host_blocking)
        return InvalidArgument(RankName(static_cast<int32_t>(r)) + " queue " + q.name +
                               ": the dispatcher waits for an op that is not a host-blocking op on a stream");
      if (ops_[d].queue < 0)  // found by device_json_fuzzer: queue mode off, yet a dispatcher
        return InvalidArgument(RankName(static_cast<int32_t>(r)) + " queue " + q.name +
                               " has a blocked dispatcher but the task queue mode is off");
      s->Set(queues_[ops_[d].queue].word + 2, d);
    }
  }
  return Status::Ok();
}

// The initial state of the threads blocked on a host_sync or a host-blocking op.
Status Program::InitialThreads(CompileContext* cx, State* s) {
  const model::DeviceJob& job = cx->job;
  for (size_t ti = 0; ti < threads_.size(); ++ti) {
    const ThreadInfo& t = threads_[ti];
    s->Set(t.word + 1, -1);
    OpId b = job.ranks[t.rank].threads[t.job_index].blocked_on;
    if (b < 0) continue;
    if (b >= static_cast<OpId>(cx->n) || job.ops[b].rank != rank_of_[t.rank])
      return InvalidArgument(RankName(t.rank) + " thread " + t.name + " is blocked on an op it does not own");
    if (job.ops[b].kind == OpKind::kHostSync) {
      if (cx->placed[b]) return InvalidArgument(OpWhere(job.ops[b], b) + " is listed twice");
      cx->placed[b] = 1;
      ops_[b].thread = static_cast<int32_t>(ti);
      s->Set(OpWord(b), kIssued);
    } else if (!(cx->placed[b] == 2 || cx->placed[b] == 3) || !job.ops[b].host_blocking) {
      return InvalidArgument(RankName(t.rank) + " thread " + t.name +
                             " is blocked on an op that is neither a host_sync nor a host-blocking op in flight");
    }
    s->Set(t.word + 1, b);
  }
  return Status::Ok();
}

// The state the input describes: for a schedule, nothing issued.
Status Program::MakeInitial(CompileContext* cx) {
  State s(static_cast<size_t>(words_));
  for (size_t i = 0; i < cx->n; ++i) {
    s.Set(OpWord(static_cast<OpId>(i)) + 1, -1);
    s.Set(OpWord(static_cast<OpId>(i)) + 2, -1);
  }
  for (const auto& q : queues_) s.Set(q.word + 2, -1);
  for (const auto& e : cx->job.recorded_events) s.Set(event_word_ + cx->event_index.at(e), 1);
  HANGDX_RETURN_IF_ERROR(InitialStreams(cx, &s));
  HANGDX_RETURN_IF_ERROR(InitialQueues(cx, &s));
  HANGDX_RETURN_IF_ERROR(InitialThreads(cx, &s));
  // Seqs of what is already in flight, in DeviceJob::Number's order.
  for (OpId id : cx->order) {
    if (ops_[id].table >= 0) TakeSeq(&s, ops_[id].table, id);
  }
  for (size_t i = 0; i < cx->n; ++i) {
    if (ops_[i].rank >= 0 && s[OpWord(static_cast<OpId>(i))] >= kStarted) CountStart(&s, static_cast<OpId>(i));
  }
  // A host_sync already waiting on a stream waits for what is destined to it now.
  for (const auto& t : threads_) {
    OpId b = s[t.word + 1];
    if (b >= 0 && ops_[b].kind == OpKind::kHostSync && ops_[b].stream >= 0)
      s.Set(OpWord(b) + 2, LastDestined(s, ops_[b].stream));
  }
  initial_ = s;
  return Status::Ok();
}

Status Program::Compile(const model::DeviceJob& job) {
  job_ = &job;
  mode_ = job.queue_mode;
  if (job.ops.size() > (1u << 24))
    return InvalidArgument("too many ops to simulate: " + std::to_string(job.ops.size()));
  ops_.assign(job.ops.size(), COp());
  CompileContext cx(job);
  HANGDX_RETURN_IF_ERROR(IndexRanksAndPgs(&cx));
  HANGDX_RETURN_IF_ERROR(PlaceOps(&cx));
  HANGDX_RETURN_IF_ERROR(MarkFinished(&cx));
  for (size_t i = 0; i < cx.n; ++i) {
    if (cx.InRun(i)) HANGDX_RETURN_IF_ERROR(ResolveOp(&cx, i));
  }
  for (const auto& r : job.recorded_events) EventOf(&cx, r);
  MakeQueues(cx);
  MakeTables(&cx);
  MakePgCounts(&cx);
  HANGDX_RETURN_IF_ERROR(Layout(cx));
  MakeConflictKeys();
  HANGDX_RETURN_IF_ERROR(MakeInitial(&cx));
  MakeTriggers();
  return Status::Ok();
}

int32_t Program::TakeSeq(State* s, int32_t table, OpId o) const {
  const Table& t = tables_[table];
  int32_t seq = (*s)[t.word];
  s->Set(t.word + 1 + seq, o);
  s->Set(t.word, seq + 1);
  s->Set(OpWord(o) + 1, seq);
  return seq;
}

void Program::CountStart(State* s, OpId o) const {
  const COp& c = ops_[o];
  if (c.kind != OpKind::kCollective || pg_count_word_[c.pg] < 0 || Seq(*s, o) < 0) return;
  int32_t w = pg_count_word_[c.pg] + Seq(*s, o);
  s->Set(w, (*s)[w] + 1);
}

void Program::AppendStream(State* s, int32_t st, OpId o) const {
  const StreamInfo& si = streams_[st];
  int32_t tail = (*s)[si.word + 1];
  s->Set(si.word + 3 + tail, o);
  s->Set(si.word + 1, tail + 1);
  s->Set(OpWord(o), kOnStream);
}

OpId Program::LastDestined(const State& s, int32_t stream) const {
  // Queue entries are dispatched after everything already on the stream.
  for (int32_t qi : rank_queues_[streams_[stream].rank]) {
    const QueueInfo& q = queues_[qi];
    for (int32_t i = s[q.word + 1] - 1; i >= s[q.word]; --i) {
      OpId o = s[q.word + 3 + i];
      if (ops_[o].stream == stream) return o;
    }
  }
  const StreamInfo& si = streams_[stream];
  return s[si.word] < s[si.word + 1] ? s[si.word + 3 + s[si.word + 1] - 1] : -1;
}

bool Program::AnySenderReady(const State& s, OpId o, const AnySender& a) const {
  int32_t next = s[tables_[a.recv_table].word];  // the pair's next recv count
  return Started(s, TableOp(s, a.send_table, next));
}

bool Program::FinishCond(const State& s, OpId o) const {
  const COp& c = ops_[o];
  if (c.failed) return false;
  switch (c.kind) {
    case OpKind::kCompute:
    case OpKind::kRecord:
      return true;
    case OpKind::kWait:
      return s[event_word_ + c.event] != 0;
    case OpKind::kCollective: {
      int32_t seq = Seq(s, o);
      return pg_ready_[c.pg] && seq >= 0 && s[pg_count_word_[c.pg] + seq] >= pg_need_[c.pg];
    }
    case OpKind::kSend:
    case OpKind::kRecv:
      if (c.peer == -1) return false;  // any-source: see AnySenderReady
      return c.partner_table >= 0 && Started(s, TableOp(s, c.partner_table, Seq(s, o)));
    case OpKind::kHostSync:
      return false;
  }
  return false;
}

bool Program::SyncCond(const State& s, OpId o) const {
  const COp& c = ops_[o];
  if (c.failed) return false;
  if (c.event >= 0) return s[event_word_ + c.event] != 0;
  OpId target = Aux(s, o);
  return target < 0 || OpStatus(s, target) == kFinished;
}

// An issue by thread t commutes with every transition the rest of the job
// can take before it when no other thread of its rank will ever append to
// the same stream or queue, take a seq from the same counter, or (for a
// host_sync on a stream) append to that stream -- and, for a named recv, no
// any-source recv of its rank and pg is still unmatched. Dispatchers never
// conflict with issues (they pop the head, issues push the tail, and each
// stream is fed by one dispatcher), and starts and finishes read only heads.
//
// CountUses fills the scratch counts first: per conflict key of `rank`'s
// ops, the threads of that rank (when it has more than one) that will still
// write or read it, so that each check is O(keys of one op). Every key is
// rank-local (a stream, a queue, a counter only that rank takes seqs from),
// so other ranks' threads never count.
void Program::CountUses(const State& s, int32_t rank) const {
  for (int32_t ui : rank_threads_[rank]) {
    const ThreadInfo& u = threads_[ui];
    if (!u.shares_rank) continue;
    const int32_t pc = s[u.word];
    if (pc >= static_cast<int32_t>(u.program.size())) continue;
    for (const auto& [k, lw, lr] : u.uses) {
      if (lw < pc && lr < pc) continue;
      if (key_users_[k]++ == 0) key_touched_.push_back(k);
      if (lw >= pc) key_writers_[k]++;
    }
  }
}

void Program::ClearUses() const {
  for (int32_t k : key_touched_) key_users_[k] = key_writers_[k] = 0;
  key_touched_.clear();
}

// Needs CountUses(s, its rank) when the thread's rank has other threads.
bool Program::IssueSafe(const State& s, int32_t thread) const {
  const ThreadInfo& t = threads_[thread];
  const int32_t pc = s[t.word];
  OpId o = t.program[pc];
  const COp& c = ops_[o];
  const int32_t qkey = static_cast<int32_t>(streams_.size());
  const int32_t tkey = qkey + static_cast<int32_t>(queues_.size());
  if (c.kind == OpKind::kHostSync) {
    if (c.stream < 0 || !t.shares_rank) return true;
    // Other threads that will still write the stream (this one counts itself
    // when it writes the stream later).
    auto it = t.last_use.find(c.stream);
    int32_t self = it != t.last_use.end() && it->second.first >= pc ? 1 : 0;
    return key_writers_[c.stream] - self == 0;
  }
  if (t.shares_rank) {
    // This thread uses each key of its next op: any other user conflicts.
    if (key_users_[c.stream] > 1) return false;
    if (c.queue >= 0 && key_users_[qkey + c.queue] > 1) return false;
    if (c.table >= 0 && key_users_[tkey + c.table] > 1) return false;
  }
  if (c.kind == OpKind::kRecv && c.peer != -1) {
    auto it = anysource_.find({c.rank, c.pg});
    if (it != anysource_.end()) {
      for (OpId a : it->second) {
        if (OpStatus(s, a) != kFinished) return false;
      }
    }
  }
  return true;
}

// The finishes of the started any-source recv h at the head of stream st:
// one per sender whose next send to it has started.
void Program::AnySourceFinishes(const State& s, int32_t st, OpId h, std::vector<Trans>* out) const {
  const COp& c = ops_[h];
  for (int32_t a = 0; a < static_cast<int32_t>(c.senders.size()); ++a) {
    if (AnySenderReady(s, h, c.senders[a])) out->push_back({Step::Kind::kFinish, st, a});
  }
}

void Program::AllEnabled(const State& s, std::vector<Trans>* out, int64_t* examined) const {
  out->clear();
  *examined += static_cast<int64_t>(streams_.size() + queues_.size() + threads_.size());
  for (int32_t st = 0; st < static_cast<int32_t>(streams_.size()); ++st) {
    OpId h = StreamHead(s, st);
    if (h < 0) continue;
    const COp& c = ops_[h];
    if (s[streams_[st].word + 2]) {
      if (c.kind == OpKind::kRecv && c.peer == -1) {
        AnySourceFinishes(s, st, h, out);
      } else if (FinishCond(s, h)) {
        out->push_back({Step::Kind::kFinish, st, -1});
      }
      continue;
    }
    if (c.pool >= 0 && s[pools_[c.pool].word] >= pools_[c.pool].capacity) continue;
    out->push_back({Step::Kind::kStart, st, -1});
  }
  for (int32_t q = 0; q < static_cast<int32_t>(queues_.size()); ++q) {
    const QueueInfo& qi = queues_[q];
    if (s[qi.word + 2] >= 0 || s[qi.word] >= s[qi.word + 1]) continue;
    out->push_back({Step::Kind::kDispatch, q, -1});
  }
  for (int32_t t = 0; t < static_cast<int32_t>(threads_.size()); ++t) {
    const ThreadInfo& ti = threads_[t];
    OpId b = s[ti.word + 1];
    if (b >= 0) {
      if (ops_[b].kind == OpKind::kHostSync && SyncCond(s, b)) out->push_back({Step::Kind::kSyncDone, t, -1});
      continue;
    }
    if (s[ti.word] < static_cast<int32_t>(ti.program.size())) out->push_back({Step::Kind::kIssue, t, -1});
  }
}

// The order of preference is that of a scan of every part of the job:
// streams (a head that finishes, or starts without a pool that can run
// short), then queues (a dispatch), then threads (a host_sync that
// returns), then the first issue IssueSafe allows. What cannot move is
// dropped from `c` as it is met; an any-source recv that has started stays
// (its senders' progress is not traced by Touch).
void Program::Reduced(const State& s, Candidates* c, std::vector<Trans>* out, int64_t* examined) const {
  out->clear();
  auto one = [out](Step::Kind kind, int32_t idx) { *out = {{kind, idx, -1}}; };
  const IdSet& streams = c->Of(Candidates::kStream);
  for (int32_t st = streams.Next(0); st >= 0; st = streams.Next(st + 1)) {
    ++*examined;
    OpId h = StreamHead(s, st);
    if (h < 0) {
      c->Drop(Candidates::kStream, st);
      continue;
    }
    const COp& op = ops_[h];
    if (s[streams_[st].word + 2]) {
      if (op.kind == OpKind::kRecv && op.peer == -1) {
        AnySourceFinishes(s, st, h, out);
      } else if (FinishCond(s, h)) {
        return one(Step::Kind::kFinish, st);
      } else {
        c->Drop(Candidates::kStream, st);
      }
      continue;
    }
    if (op.pool >= 0) {
      const PoolInfo& p = pools_[op.pool];
      if (s[p.word] >= p.capacity) {
        c->Drop(Candidates::kStream, st);
        continue;
      }
      // Safe when the pool can never run short: its capacity covers every
      // unfinished op that uses it.
      if (p.capacity >= p.total - s[p.word + 1]) return one(Step::Kind::kStart, st);
      out->push_back({Step::Kind::kStart, st, -1});
      continue;
    }
    return one(Step::Kind::kStart, st);
  }
  const IdSet& queues = c->Of(Candidates::kQueue);
  for (int32_t q = queues.Next(0); q >= 0; q = queues.Next(q + 1)) {
    ++*examined;
    const QueueInfo& qi = queues_[q];
    if (s[qi.word + 2] < 0 && s[qi.word] < s[qi.word + 1]) return one(Step::Kind::kDispatch, q);
    c->Drop(Candidates::kQueue, q);
  }
  const IdSet& syncs = c->Of(Candidates::kSync);
  for (int32_t t = syncs.Next(0); t >= 0; t = syncs.Next(t + 1)) {
    ++*examined;
    OpId b = s[threads_[t].word + 1];
    if (b >= 0 && ops_[b].kind == OpKind::kHostSync && SyncCond(s, b)) return one(Step::Kind::kSyncDone, t);
    c->Drop(Candidates::kSync, t);
  }
  const IdSet& issues = c->Of(Candidates::kIssue);
  int32_t counted = -1;  // the rank whose conflict keys are counted
  for (int32_t t = issues.Next(0); t >= 0; t = issues.Next(t + 1)) {
    ++*examined;
    const ThreadInfo& ti = threads_[t];
    if (s[ti.word + 1] >= 0 || s[ti.word] >= static_cast<int32_t>(ti.program.size())) {
      c->Drop(Candidates::kIssue, t);
      continue;
    }
    if (ti.shares_rank && counted != ti.rank) {
      if (counted >= 0) ClearUses();
      CountUses(s, ti.rank);
      counted = ti.rank;
    }
    if (IssueSafe(s, t)) {
      one(Step::Kind::kIssue, t);
      break;
    }
    out->push_back({Step::Kind::kIssue, t, -1});
  }
  if (counted >= 0) ClearUses();
}

// What a change of op o's status may enable: a started send or named recv
// lets its partner (the op with the same seq on the other side) finish, and
// so does an any-source recv once it is matched (it takes its seq then).
void Program::TouchOp(const State& s, OpId o, Candidates* c) const {
  const COp& op = ops_[o];
  if (OpStatus(s, o) < kStarted || (op.kind != OpKind::kSend && op.kind != OpKind::kRecv)) return;
  int32_t table = op.partner_table;
  if (op.peer == -1) {
    table = -1;
    for (const AnySender& a : op.senders) {
      if (a.rank == Aux(s, o)) table = a.send_table;
    }
  }
  OpId partner = table < 0 ? -1 : TableOp(s, table, Seq(s, o));
  if (partner >= 0) c->Add(Candidates::kStream, ops_[partner].stream);
}

void Program::TouchWord(const State& s, int32_t w, int32_t old, Candidates* c) const {
  auto index_in = [w](const std::vector<int32_t>& starts) {
    return static_cast<int32_t>(std::upper_bound(starts.begin(), starts.end(), w) - starts.begin()) - 1;
  };
  if (w < thread_word0_) {
    if (w % 3 == 0) TouchOp(s, w / 3, c);
  } else if (w < queue_word0_) {
    const int32_t t = (w - thread_word0_) / 2;
    c->Add(Candidates::kSync, t);
    c->Add(Candidates::kIssue, t);
  } else if (w < stream_word0_) {
    c->Add(Candidates::kQueue, index_in(queue_words_));
  } else if (w < pool_word0_) {
    const int32_t st = index_in(stream_words_);
    c->Add(Candidates::kStream, st);
    for (int32_t t : stream_syncs_[st]) c->Add(Candidates::kSync, t);  // its target may have finished
  } else if (w < event_word_) {
    const int32_t p = (w - pool_word0_) / 2;
    if ((w - pool_word0_) % 2 == 0 && s[w] < old) {  // a unit freed
      for (int32_t st : pool_streams_[p]) c->Add(Candidates::kStream, st);
    }
  } else if (w < table_word0_) {
    const int32_t e = w - event_word_;
    for (int32_t st : event_waiters_[e]) c->Add(Candidates::kStream, st);
    for (int32_t t : event_syncs_[e]) c->Add(Candidates::kSync, t);
  } else if (w >= count_word0_) {
    // The members' ops of a collective seq finish once every member started one.
    auto it = std::upper_bound(count_pgs_.begin(), count_pgs_.end(), std::make_pair(w, INT32_MAX)) - 1;
    const int32_t pg = it->second, seq = w - it->first;
    if (s[w] < pg_need_[pg]) return;
    for (int32_t t : pg_member_tables_[pg]) {
      OpId o = t < 0 ? -1 : TableOp(s, t, seq);
      if (o >= 0) c->Add(Candidates::kStream, ops_[o].stream);
    }
  }
  // Table words enable nothing by themselves: a seq taken at issue comes
  // with its op's own stream or queue change, and the any-source recvs that
  // read the counts stay candidates once started.
}

void Program::Touch(const State& s, const State::Trail& trail, size_t from, Candidates* c) const {
  for (size_t i = from; i < trail.size(); ++i) TouchWord(s, trail[i].first, trail[i].second, c);
}

void Program::FinishOp(State* s, OpId o) const {
  const COp& c = ops_[o];
  s->Set(OpWord(o), kFinished);
  if (c.stream >= 0 && c.kind != OpKind::kHostSync) {
    const StreamInfo& si = streams_[c.stream];
    int32_t head = (*s)[si.word];
    s->Set(si.word + 3 + head, -1);
    s->Set(si.word, head + 1);
    s->Set(si.word + 2, 0);
  }
  if (c.pool >= 0) {
    const PoolInfo& p = pools_[c.pool];
    s->Set(p.word, (*s)[p.word] - 1);
    s->Set(p.word + 1, (*s)[p.word + 1] + 1);
  }
  if (c.kind == OpKind::kRecord) s->Set(event_word_ + c.event, 1);
  if (c.blocking) {
    if (c.thread >= 0 && (*s)[threads_[c.thread].word + 1] == o) s->Set(threads_[c.thread].word + 1, -1);
    if (c.queue >= 0 && (*s)[queues_[c.queue].word + 2] == o) s->Set(queues_[c.queue].word + 2, -1);
  }
}

void Program::Apply(State* s, const Trans& t) const {
  switch (t.kind) {
    case Step::Kind::kIssue: {
      const ThreadInfo& ti = threads_[t.idx];
      int32_t pc = (*s)[ti.word];
      OpId o = ti.program[pc];
      const COp& c = ops_[o];
      s->Set(ti.word, pc + 1);
      if (c.kind == OpKind::kHostSync) {
        s->Set(OpWord(o), kIssued);
        s->Set(ti.word + 1, o);
        if (c.stream >= 0) s->Set(OpWord(o) + 2, LastDestined(*s, c.stream));
        return;
      }
      if (c.table >= 0) TakeSeq(s, c.table, o);
      if (c.queue >= 0) {
        const QueueInfo& q = queues_[c.queue];
        int32_t tail = (*s)[q.word + 1];
        s->Set(q.word + 3 + tail, o);
        s->Set(q.word + 1, tail + 1);
        s->Set(OpWord(o), kIssued);
      } else {
        AppendStream(s, c.stream, o);
      }
      if (c.blocking) s->Set(ti.word + 1, o);
      return;
    }
    case Step::Kind::kDispatch: {
      const QueueInfo& q = queues_[t.idx];
      int32_t head = (*s)[q.word];
      OpId o = (*s)[q.word + 3 + head];
      s->Set(q.word + 3 + head, -1);
      s->Set(q.word, head + 1);
      AppendStream(s, ops_[o].stream, o);
      if (ops_[o].blocking) s->Set(q.word + 2, o);
      return;
    }
    case Step::Kind::kStart: {
      OpId o = StreamHead(*s, t.idx);
      const COp& c = ops_[o];
      if (c.pool >= 0) s->Set(pools_[c.pool].word, (*s)[pools_[c.pool].word] + 1);
      if ((c.kind == OpKind::kCompute || c.kind == OpKind::kRecord) && !c.failed) {
        FinishOp(s, o);
        return;
      }
      s->Set(OpWord(o), kStarted);
      s->Set(streams_[t.idx].word + 2, 1);
      CountStart(s, o);
      return;
    }
    case Step::Kind::kFinish: {
      OpId o = StreamHead(*s, t.idx);
      if (t.arg >= 0) {
        const AnySender& a = ops_[o].senders[t.arg];
        TakeSeq(s, a.recv_table, o);
        s->Set(OpWord(o) + 2, a.rank);
      }
      FinishOp(s, o);
      return;
    }
    case Step::Kind::kSyncDone: {
      const ThreadInfo& ti = threads_[t.idx];
      OpId o = (*s)[ti.word + 1];
      s->Set(OpWord(o), kFinished);
      s->Set(ti.word + 1, -1);
      return;
    }
  }
}

bool Program::Finished(const State& s) const {
  for (const auto& t : threads_) {
    if (s[t.word] < static_cast<int32_t>(t.program.size()) || s[t.word + 1] >= 0) return false;
  }
  for (const auto& q : queues_) {
    if (s[q.word] < s[q.word + 1] || s[q.word + 2] >= 0) return false;
  }
  for (const auto& st : streams_) {
    if (s[st.word] < s[st.word + 1]) return false;
  }
  return true;
}

DevOp Program::Labeled(const State& s, OpId o) const {
  DevOp op = job_->ops[o];
  op.seq = Seq(s, o);
  if (op.kind == OpKind::kRecv && op.peer < 0 && Aux(s, o) >= 0) op.peer = rank_of_[Aux(s, o)];
  return op;
}

std::string Program::Label(const State& s, OpId o) const { return OpLabel(Labeled(s, o)); }

std::string Program::QueueName(int32_t q) const {
  return mode_ == QueueMode::kPerDevice ? "device queue" : "queue of stream " + queues_[q].name;
}

std::string Program::Describe(const State& before, const State& after, const Trans& t) const {
  switch (t.kind) {
    case Step::Kind::kIssue: {
      const ThreadInfo& ti = threads_[t.idx];
      OpId o = ti.program[before[ti.word]];
      const COp& c = ops_[o];
      std::string head = RankName(ti.rank) + " thread " + ti.name;
      if (c.kind == OpKind::kHostSync) return head + " calls " + Label(after, o) + " and blocks";
      std::string s = head + " issues " + Label(after, o) + " to " +
                      (c.queue >= 0 ? QueueLabel(c.queue) : "stream " + streams_[c.stream].name);
      if (c.blocking) s += " and blocks until it finishes";
      return s;
    }
    case Step::Kind::kDispatch: {
      const QueueInfo& q = queues_[t.idx];
      OpId o = before[q.word + 3 + before[q.word]];
      std::string s = RankName(q.rank) + " dispatcher of " + QueueLabel(t.idx) + " moves " + Label(after, o) +
                      " to stream " + streams_[ops_[o].stream].name;
      if (ops_[o].blocking) s += " and waits for it to finish";
      return s;
    }
    case Step::Kind::kStart: {
      const StreamInfo& si = streams_[t.idx];
      OpId o = StreamHead(before, t.idx);
      const COp& c = ops_[o];
      bool runs = (c.kind == OpKind::kCompute || c.kind == OpKind::kRecord) && !c.failed;
      std::string s = RankName(si.rank) + " stream " + si.name + (runs ? " runs " : " starts ") + Label(after, o);
      if (c.pool >= 0) {
        const PoolInfo& p = pools_[c.pool];
        int32_t held = runs ? before[p.word] + 1 : after[p.word];
        s +=
            " (takes a unit of " + p.name + ": " + std::to_string(held) + "/" + std::to_string(p.capacity) + " in use)";
      }
      return s;
    }
    case Step::Kind::kFinish: {
      const StreamInfo& si = streams_[t.idx];
      OpId o = StreamHead(before, t.idx);
      std::string s = RankName(si.rank) + " stream " + si.name + " finishes " + Label(after, o);
      if (t.arg >= 0) s += ", matched with " + RankName(ops_[o].senders[t.arg].rank) + "'s send";
      if (ops_[o].pool >= 0) s += " (frees a unit of " + pools_[ops_[o].pool].name + ")";
      return s;
    }
    case Step::Kind::kSyncDone: {
      const ThreadInfo& ti = threads_[t.idx];
      OpId o = before[ti.word + 1];
      return RankName(ti.rank) + " thread " + ti.name + " returns from " + Label(after, o);
    }
  }
  return "";
}

Step Program::MakeStep(const State& before, const State& after, const Trans& t) const {
  Step step;
  step.kind = t.kind;
  step.text = Describe(before, after, t);
  switch (t.kind) {
    case Step::Kind::kIssue:
      step.op = threads_[t.idx].program[before[threads_[t.idx].word]];
      break;
    case Step::Kind::kDispatch:
      step.op = before[queues_[t.idx].word + 3 + before[queues_[t.idx].word]];
      break;
    case Step::Kind::kStart:
    case Step::Kind::kFinish:
      step.op = StreamHead(before, t.idx);
      break;
    case Step::Kind::kSyncDone:
      step.op = before[threads_[t.idx].word + 1];
      break;
  }
  switch (t.kind) {
    case Step::Kind::kIssue:
    case Step::Kind::kSyncDone:
      step.rank = rank_of_[threads_[t.idx].rank];
      break;
    case Step::Kind::kDispatch:
      step.rank = rank_of_[queues_[t.idx].rank];
      break;
    case Step::Kind::kStart:
    case Step::Kind::kFinish:
      step.rank = rank_of_[streams_[t.idx].rank];
      break;
  }
  return step;
}

std::string Program::Where(const State& s, OpId o) const {
  const COp& c = ops_[o];
  switch (OpStatus(s, o)) {
    case kPending: {
      if (c.thread < 0) return "not issued";
      const ThreadInfo& t = threads_[c.thread];
      int32_t ahead = 0;
      for (int32_t p = s[t.word]; p < static_cast<int32_t>(t.program.size()) && t.program[p] != o; ++p) ++ahead;
      std::string w = "not yet issued by " + RankName(t.rank) + " thread " + t.name;
      if (s[t.word + 1] >= 0) w += " (blocked in " + Label(s, s[t.word + 1]) + ")";
      if (ahead > 0) w += ", " + std::to_string(ahead) + " op" + (ahead > 1 ? "s" : "") + " before it";
      return w;
    }
    case kIssued: {
      if (c.queue >= 0) {
        const QueueInfo& q = queues_[c.queue];
        for (int32_t i = s[q.word]; i < s[q.word + 1]; ++i) {
          if (s[q.word + 3 + i] == o)
            return "in " + RankName(q.rank) + " " + QueueName(c.queue) + " at position " +
                   std::to_string(i - s[q.word]) +
                   (i > s[q.word] ? " behind " + Label(s, s[q.word + 3 + s[q.word]]) : "") +
                   (s[q.word + 2] >= 0 ? " (its dispatcher is blocked in " + Label(s, s[q.word + 2]) + ")" : "");
        }
      }
      return "issued";
    }
    case kOnStream: {
      const StreamInfo& si = streams_[c.stream];
      for (int32_t i = s[si.word]; i < s[si.word + 1]; ++i) {
        if (s[si.word + 3 + i] == o)
          return "on " + RankName(si.rank) + " stream " + si.name + " at position " + std::to_string(i - s[si.word]) +
                 (i > s[si.word] ? " behind " + Label(s, s[si.word + 3 + s[si.word]]) : " (not started)");
      }
      return "on stream " + si.name;
    }
    case kStarted:
      return "started on " + RankName(c.rank) + " stream " + streams_[c.stream].name;
    default:
      return "finished";
  }
}

std::vector<std::string> Program::Blocked(const State& s) const {
  std::vector<std::string> out;
  // Per event, the first unfinished op that records it (one pass, not one per waiter).
  std::vector<OpId> records(events_.size(), -1);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].kind == OpKind::kRecord && ops_[i].event >= 0 && ops_[i].rank >= 0 && records[ops_[i].event] < 0 &&
        OpStatus(s, static_cast<OpId>(i)) != kFinished)
      records[ops_[i].event] = static_cast<OpId>(i);
  }
  auto recorder = [&](int32_t event) -> std::string {
    OpId r = records[event];
    if (r >= 0) return "; " + Label(s, r) + " is " + Where(s, r);
    return "; nothing left records it";
  };
  for (const auto& t : threads_) {
    OpId b = s[t.word + 1];
    if (b < 0) continue;
    std::string line = RankName(t.rank) + " thread " + t.name + ": blocked in " + Label(s, b);
    const COp& c = ops_[b];
    if (c.kind == OpKind::kHostSync && c.event >= 0)
      line += ": event " + events_[c.event] + " not recorded" + recorder(c.event);
    else if (c.kind == OpKind::kHostSync && Aux(s, b) >= 0)
      line += ": waits for " + Label(s, Aux(s, b)) + ", " + Where(s, Aux(s, b));
    else if (c.kind != OpKind::kHostSync)
      line += " until it finishes; it is " + Where(s, b);
    int32_t left = static_cast<int32_t>(t.program.size()) - s[t.word];
    if (left > 0) line += " (" + std::to_string(left) + " op" + (left > 1 ? "s" : "") + " not issued)";
    out.push_back(line);
  }
  for (int32_t q = 0; q < static_cast<int32_t>(queues_.size()); ++q) {
    const QueueInfo& qi = queues_[q];
    OpId d = s[qi.word + 2];
    int32_t n = s[qi.word + 1] - s[qi.word];
    if (d < 0 && n == 0) continue;
    std::string line = RankName(qi.rank) + " " + QueueName(q) + ": ";
    line += d >= 0 ? "dispatcher blocked in " + Label(s, d) + " (host-blocking) until it finishes" : "dispatcher idle";
    if (n > 0) {
      line += "; " + std::to_string(n) + " entr" + (n > 1 ? "ies" : "y") + " behind it: ";
      for (int32_t i = s[qi.word]; i < s[qi.word + 1]; ++i)
        line += (i > s[qi.word] ? ", " : "") + Label(s, s[qi.word + 3 + i]);
    }
    out.push_back(line);
  }
  for (int32_t st = 0; st < static_cast<int32_t>(streams_.size()); ++st) {
    OpId h = StreamHead(s, st);
    if (h < 0) continue;
    const StreamInfo& si = streams_[st];
    const COp& c = ops_[h];
    int32_t n = s[si.word + 1] - s[si.word];
    std::string line = RankName(si.rank) + " stream " + si.name + " (" + std::to_string(n) + " task" +
                       (n > 1 ? "s" : "") + "): head " + Label(s, h);
    if (!s[si.word + 2]) {
      if (c.pool >= 0) {
        const PoolInfo& p = pools_[c.pool];
        line += " cannot start: needs a unit of " + p.name + ", all " + std::to_string(p.capacity) + " held";
        std::string holders;
        int32_t named = 0, more = 0;
        for (int32_t o = 0; o < static_cast<int32_t>(streams_.size()); ++o) {
          OpId hh = StreamHead(s, o);
          if (hh < 0 || !s[streams_[o].word + 2] || ops_[hh].pool != c.pool) continue;
          if (named++ < kMaxNamed)
            holders += (holders.empty() ? "" : ", ") + Label(s, hh) + " on stream " + streams_[o].name;
          else
            ++more;
        }
        if (more > 0) holders += " and " + std::to_string(more) + " more";
        if (!holders.empty()) line += " by " + holders;
      } else {
        line += " not started";
      }
    } else if (c.kind == OpKind::kWait) {
      line += " waits for event " + events_[c.event] + recorder(c.event);
    } else if (c.kind == OpKind::kCollective) {
      int32_t seq = Seq(s, h);
      const auto& members = job_->pgs.at(pg_names_[c.pg]);
      int32_t named = 0, more = 0;
      for (size_t m = 0; m < members.size(); ++m) {
        int32_t t = pg_member_tables_[c.pg][m];
        OpId peer = t < 0 ? -1 : TableOp(s, t, seq);
        if (Started(s, peer)) continue;
        if (named++ >= kMaxNamed) {  // a line per stream naming every member would be O(ranks^2)
          ++more;
          continue;
        }
        line += "; waits for rank " + std::to_string(members[m]) + ": ";
        line += peer < 0 ? "it has not issued its " + pg_names_[c.pg] + " seq " + std::to_string(seq) + " collective"
                         : Label(s, peer) + " is " + Where(s, peer);
      }
      if (more > 0) line += "; and for " + std::to_string(more) + " more member" + (more > 1 ? "s" : "");
    } else if ((c.kind == OpKind::kSend || c.kind == OpKind::kRecv) && c.peer != -1) {
      OpId peer = c.partner_table < 0 ? -1 : TableOp(s, c.partner_table, Seq(s, h));
      std::string what = c.kind == OpKind::kSend ? "recv" : "send";
      line += "; waits for rank " + std::to_string(job_->ops[h].peer) + "'s matching " + what + ": ";
      line += peer < 0 ? "not issued" : Label(s, peer) + " is " + Where(s, peer);
    } else if (c.kind == OpKind::kRecv) {
      line += "; waits for a send from any rank of " + pg_names_[c.pg] + ": none has started";
    }
    out.push_back(line);
  }
  return out;
}

model::DeviceJob Program::ToDeviceJob(const State& s) const {
  model::DeviceJob j = *job_;
  for (size_t i = 0; i < ops_.size(); ++i) {
    OpId o = static_cast<OpId>(i);
    if (ops_[i].rank < 0) continue;
    if (ops_[i].table >= 0 || (ops_[i].kind == OpKind::kRecv && Aux(s, o) >= 0)) {
      j.ops[i].seq = Seq(s, o);
    } else if (ops_[i].kind == OpKind::kRecv && ops_[i].peer == -1) {
      j.ops[i].seq = -1;
    }
  }
  j.finished.assign(j.ops.size(), false);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].rank >= 0 && OpStatus(s, static_cast<OpId>(i)) == kFinished)
      j.finished[i] = true;
    else if (i < job_->finished.size() && job_->finished[i])
      j.finished[i] = true;
  }
  std::vector<std::string> rec;
  for (size_t e = 0; e < events_.size(); ++e) {
    if (s[event_word_ + static_cast<int32_t>(e)]) rec.push_back(events_[e]);
  }
  std::sort(rec.begin(), rec.end());
  j.recorded_events = rec;
  for (size_t r = 0; r < j.ranks.size(); ++r) {
    auto& dr = j.ranks[r];
    for (size_t k = 0; k < dr.threads.size(); ++k) {
      const ThreadInfo& t = threads_[rank_threads_[r][k]];
      dr.threads[k].pending.assign(t.program.begin() + s[t.word], t.program.end());
      dr.threads[k].blocked_on = s[t.word + 1];
    }
    dr.queues.clear();
    for (int32_t q = 0; q < static_cast<int32_t>(queues_.size()); ++q) {
      if (queues_[q].rank != static_cast<int32_t>(r)) continue;
      model::TaskQueue tq;
      tq.name = queues_[q].name;
      for (int32_t i = s[queues_[q].word]; i < s[queues_[q].word + 1]; ++i)
        tq.entries.push_back(s[queues_[q].word + 3 + i]);
      tq.dispatching = s[queues_[q].word + 2];
      dr.queues.push_back(std::move(tq));
    }
    dr.streams.clear();
    for (int32_t st = 0; st < static_cast<int32_t>(streams_.size()); ++st) {
      const StreamInfo& si = streams_[st];
      if (si.rank != static_cast<int32_t>(r)) continue;
      model::Stream ms;
      ms.name = si.name;
      for (int32_t i = s[si.word]; i < s[si.word + 1]; ++i) ms.tasks.push_back(s[si.word + 3 + i]);
      ms.head_started = s[si.word + 2] != 0;
      dr.streams.push_back(std::move(ms));
    }
    for (auto& p : dr.pools) {
      p.holders.clear();
      for (int32_t st = 0; st < static_cast<int32_t>(streams_.size()); ++st) {
        OpId h = StreamHead(s, st);
        if (h >= 0 && s[streams_[st].word + 2] && ops_[h].pool >= 0 &&
            pools_[ops_[h].pool].rank == static_cast<int32_t>(r) && pools_[ops_[h].pool].name == p.name)
          p.holders.push_back(h);
      }
    }
  }
  // Ops not issued yet get the seqs they would take next, as Number() gives.
  j.Number();
  return j;
}

// One DFS frame: a state with more than one transition to explore.
struct Frame {
  std::vector<Trans> todo;
  size_t next = 1;            // todo[0] is taken when the frame is pushed
  size_t path_len = 0;        // path length at this state
  size_t trail_len = 0;       // undo trail length at this state
  size_t candidates_len = 0;  // the candidates' undo trail length at this state
};

std::string MaxSeconds(double s) {  // the time bound's name in ExploreResult::bound
  char buf[64];
  std::snprintf(buf, sizeof buf, "max seconds %g", s);
  return buf;
}

std::string Bytes(int64_t b) {  // 1073741824 -> "1 GiB", 3145728 -> "3 MiB"
  if (b >= (int64_t{1} << 30) && b % (int64_t{1} << 30) == 0) return std::to_string(b >> 30) + " GiB";
  return std::to_string(b >> 20) + " MiB";
}

// The depth-first search of Explore over one compiled program, with one
// working state: a transition records the words it changes on the trail, and
// backtracking undoes them, so a branching state costs what its transitions
// changed, not a copy of every word.
class Search {
 public:
  Search(const Program& prog, const ExploreOptions& options, ExploreResult* res)
      : prog_(prog), o_(options), res_(*res), work_(prog.Initial()), cands_(prog.NewCandidates()) {
    work_.SetTrail(&trail_);
    visited_.Insert(work_.h1(), work_.h2());
  }
  // Runs to the first deadlock, the end, or a bound; fills the result's
  // verdict, counts and (deadlock) the path. `elapsed` gives the seconds
  // since the exploration began.
  template <typename Clock>
  void Run(const Clock& elapsed);
  const std::vector<Trans>& path() const { return path_; }
  const State& state() const { return work_; }

 private:
  void Cut(std::string why) {
    res_.bound_reached = true;
    res_.bound = std::move(why);
  }
  // What the search holds: the visited set, the trails, the frames, the path.
  size_t Memory() const {
    return visited_.bytes() + trail_.capacity() * sizeof(trail_[0]) + cands_.TrailBytes() + todo_bytes_ +
           stack_.capacity() * sizeof(Frame) + path_.capacity() * sizeof(Trans);
  }
  // False (and the search cut) when visiting one more state could take the
  // search past its memory bound.
  bool RoomForAState() {
    if (Memory() - visited_.bytes() + visited_.BytesAfterInsert() <= static_cast<size_t>(o_.max_memory_bytes))
      return true;
    Cut("memory: the search would exceed " + Bytes(o_.max_memory_bytes) + " (" + std::to_string(visited_.size()) +
        " states visited)");
    return false;
  }
  // Moves the working state along `t`; true when that reaches a new state.
  bool Step(const Trans& t) {
    if (stack_.empty()) {  // nothing to go back to
      trail_.clear();
      cands_.ClearTrail();
    }
    const size_t from = trail_.size();
    prog_.Apply(&work_, t);
    if (o_.partial_order_reduction) prog_.Touch(work_, trail_, from, &cands_);
    path_.push_back(t);
    ++res_.transitions;
    return visited_.Insert(work_.h1(), work_.h2());
  }
  void Pop() {
    todo_bytes_ -= stack_.back().todo.capacity() * sizeof(Trans);
    stack_.pop_back();
  }
  // Backtracks to the deepest frame with a transition left and takes it;
  // false when the search is over (or out of memory).
  bool Backtrack() {
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      if (f.next >= f.todo.size()) {
        Pop();
        continue;
      }
      Trans t = f.todo[f.next++];
      work_.Undo(f.trail_len);
      cands_.Undo(f.candidates_len);
      path_.resize(f.path_len);
      if (f.next >= f.todo.size()) Pop();  // last branch: the frame is done
      if (!RoomForAState()) return false;
      if (Step(t)) return true;
    }
    return false;
  }

  const Program& prog_;
  const ExploreOptions& o_;
  ExploreResult& res_;
  VisitedSet visited_;
  State work_;
  State::Trail trail_;
  Candidates cands_;
  std::vector<Frame> stack_;
  std::vector<Trans> path_, ample_;
  size_t todo_bytes_ = 0;  // the frames' branch lists
};

template <typename Clock>
void Search::Run(const Clock& elapsed) {
  int64_t since_clock = 0;
  bool more = true;
  while (more) {
    if (static_cast<int64_t>(visited_.size()) >= o_.max_states) {
      Cut("max states " + std::to_string(o_.max_states));
      break;
    }
    // A step costs what it changed, but a branching state lists every
    // enabled transition: look at the clock often.
    if (++since_clock >= 64) {
      since_clock = 0;
      if (elapsed() > o_.max_seconds) {
        Cut(MaxSeconds(o_.max_seconds));
        break;
      }
    }
    if (o_.partial_order_reduction)
      prog_.Reduced(work_, &cands_, &ample_, &res_.examined);
    else
      prog_.AllEnabled(work_, &ample_, &res_.examined);
    if (ample_.empty()) {
      if (!prog_.Finished(work_)) {
        res_.deadlock = true;
        break;
      }
      more = Backtrack();
      continue;
    }
    if (static_cast<int64_t>(path_.size()) >= o_.max_depth) {
      if (!res_.bound_reached) Cut("max depth " + std::to_string(o_.max_depth));
      more = Backtrack();
      continue;
    }
    if (ample_.size() > 1) {
      if (Memory() + ample_.size() * sizeof(Trans) > static_cast<size_t>(o_.max_memory_bytes)) {
        Cut("memory: the search stack would exceed " + Bytes(o_.max_memory_bytes));
        break;
      }
      stack_.push_back(Frame{ample_, 1, path_.size(), trail_.size(), cands_.TrailSize()});
      todo_bytes_ += stack_.back().todo.capacity() * sizeof(Trans);
    }
    if (!RoomForAState()) break;
    if (!Step(ample_[0])) more = Backtrack();
  }
  res_.states = static_cast<int64_t>(visited_.size());
}

}  // namespace

std::string OpLabel(const model::DevOp& op) {
  std::string seq = op.seq >= 0 ? " seq " + std::to_string(op.seq) : "";
  std::string kind = DevOpKindName(op.kind);
  std::string base;
  switch (op.kind) {
    case OpKind::kCompute:
      return op.name.empty() ? "compute" : op.name;
    case OpKind::kRecord:
    case OpKind::kWait:
      base = kind + " " + op.event;
      break;
    case OpKind::kCollective:
      return (op.name.empty() ? kind : op.name) + " (" + op.pg + seq + ")";
    case OpKind::kSend:
      base = "send to " + std::to_string(op.peer) + " (" + op.pg + seq + ")";
      break;
    case OpKind::kRecv:
      base = "recv from " + (op.peer >= 0 ? std::to_string(op.peer) : std::string("any")) + " (" + op.pg + seq + ")";
      break;
    case OpKind::kHostSync:
      base = op.event.empty() ? "host_sync on stream " + op.stream : "host_sync on " + op.event;
      break;
  }
  // The reader's default names ("send", "record e1", "host_sync e1") add nothing.
  const std::string target = op.event.empty() ? op.stream : op.event;
  if (op.name.empty() || op.name == kind || op.name == kind + " " + target) return base;
  return op.name + " [" + base + "]";
}

StatusOr<ExploreResult> Explore(const model::DeviceJob& job, const ExploreOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  ExploreResult res;
  Program prog;
  if (Status st = prog.Compile(job); !st.ok()) return st;
  if (elapsed() > options.max_seconds) {
    res.bound_reached = true;
    res.bound = MaxSeconds(options.max_seconds);
    res.seconds = elapsed();
    return res;
  }
  Search search(prog, options, &res);
  search.Run(elapsed);
  if (res.deadlock) {
    // Replay the path with the state before and after each step, each moved
    // by the transition (a copy per step would cost O(words) each).
    State before = prog.Initial(), after = prog.Initial();
    res.witness.reserve(search.path().size());
    for (const Trans& t : search.path()) {
      prog.Apply(&after, t);
      res.witness.push_back(prog.MakeStep(before, after, t));
      prog.Apply(&before, t);
    }
    res.stuck = prog.ToDeviceJob(after);
    res.blocked = prog.Blocked(after);
  }
  res.seconds = elapsed();
  return res;
}

}  // namespace hangdx::sim
