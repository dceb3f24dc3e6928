#include "hangdx/sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "hangdx/model/testing/device_job_builder.h"

namespace hangdx::sim {
namespace {

using model::QueueMode;
using model::testing::DeviceJobBuilder;
using ::testing::HasSubstr;

ExploreResult Sim(const model::DeviceJob& job, bool por = true, int64_t max_states = 1'000'000) {
  ExploreOptions o;
  o.partial_order_reduction = por;
  o.max_states = max_states;
  auto r = Explore(job, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ExploreResult{};
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string Witness(const ExploreResult& r) {
  std::string s;
  for (const auto& st : r.witness) s += st.text + "\n";
  return s;
}

// §2: both ranks send, then recv, on one stream each: the sends wait for
// recvs queued behind them.
model::DeviceJob SendSend(bool parity) {
  DeviceJobBuilder b;
  b.Pg("pp", {0, 1});
  for (model::Rank r : {0, 1}) {
    if (parity && r == 1) {
      b.Recv(r, "main", "comm", "pp", 1 - r);
      b.Send(r, "main", "comm", "pp", 1 - r);
    } else {
      b.Send(r, "main", "comm", "pp", 1 - r);
      b.Recv(r, "main", "comm", "pp", 1 - r);
    }
  }
  return b.Build();
}

TEST(Explore, SendSendDeadlocks) {
  ExploreResult r = Sim(SendSend(false));
  EXPECT_TRUE(r.deadlock);
  EXPECT_FALSE(r.bound_reached);
  // Every op issued, both sends started, the recvs behind them.
  ASSERT_EQ(r.stuck.ranks.size(), 2u);
  for (const auto& d : r.stuck.ranks) {
    ASSERT_EQ(d.streams.size(), 1u);
    EXPECT_EQ(d.streams[0].tasks.size(), 2u);
    EXPECT_TRUE(d.streams[0].head_started);
    EXPECT_EQ(r.stuck.ops[d.streams[0].tasks[0]].kind, model::DevOp::Kind::kSend);
    EXPECT_EQ(r.stuck.ops[d.streams[0].tasks[0]].seq, 0);
  }
  std::string blocked = Joined(r.blocked);
  EXPECT_THAT(blocked, HasSubstr("rank 0 stream comm (2 tasks): head send to 1 (pp seq 0); waits for rank 1's "
                                 "matching recv: recv from 0 (pp seq 0) is on rank 1 stream comm at position 1 "
                                 "behind send to 0 (pp seq 0)"));
  EXPECT_THAT(Witness(r), HasSubstr("rank 0 thread main issues send to 1 (pp seq 0) to stream comm"));
  // Per rank: issue the send, start it, issue the recv.
  EXPECT_EQ(r.witness.size(), 6u) << Witness(r);
}

TEST(Explore, ParityOrderPasses) {
  ExploreResult r = Sim(SendSend(true));
  EXPECT_FALSE(r.deadlock);
  EXPECT_FALSE(r.bound_reached);
  EXPECT_GT(r.states, 1);
  EXPECT_TRUE(r.witness.empty());
}

// The stuck state is a state: exploring it again finds it stuck at once.
TEST(Explore, StuckStateIsStuck) {
  ExploreResult r = Sim(SendSend(false));
  ASSERT_TRUE(r.deadlock);
  ExploreResult again = Sim(r.stuck);
  EXPECT_TRUE(again.deadlock);
  EXPECT_EQ(again.states, 1);
  EXPECT_TRUE(again.witness.empty());
  EXPECT_EQ(Joined(again.blocked), Joined(r.blocked));
}

// §3: each stream waits for an event the other records after its own wait.
TEST(Explore, StreamEventCycle) {
  DeviceJobBuilder b;
  b.Pg("tp", {0, 1});
  for (model::Rank r : {0, 1}) {
    std::string a = "eA" + std::to_string(r), bb = "eB" + std::to_string(r);
    b.Wait(r, "main", "compute", a);
    b.Compute(r, "main", "compute", "matmul");
    b.Record(r, "main", "compute", bb);
    b.Wait(r, "main", "comm", bb);
    b.Collective(r, "main", "comm", "tp");
    b.Record(r, "main", "comm", a);
  }
  ExploreResult r = Sim(b.Build());
  EXPECT_TRUE(r.deadlock);
  std::string blocked = Joined(r.blocked);
  EXPECT_THAT(blocked, HasSubstr("rank 0 stream compute (3 tasks): head wait eA0 waits for event eA0; record eA0 is "
                                 "on rank 0 stream comm at position 2 behind wait eB0"));
  EXPECT_THAT(blocked, HasSubstr("rank 1 stream comm (3 tasks): head wait eB1 waits for event eB1; record eB1 is on "
                                 "rank 1 stream compute at position 2 behind wait eA1"));
}

// §5: thread compute records e on the compute stream; thread comm waits for
// e on the comm stream, then a host-blocking all_reduce. One queue per
// device puts the all_reduce ahead of the record in some interleavings.
model::DeviceJob TaskQueue(QueueMode mode, int pairs = 1) {
  DeviceJobBuilder b(mode);
  b.Pg("tp", {0, 1});
  for (model::Rank r : {0, 1}) {
    for (int p = 0; p < pairs; ++p) {
      std::string e = "grad" + std::to_string(p) + "_" + std::to_string(r), sfx = std::to_string(p);
      b.Compute(r, "compute" + sfx, "compute" + sfx, "matmul");
      b.Record(r, "compute" + sfx, "compute" + sfx, e);
      b.Wait(r, "comm" + sfx, "comm" + sfx, e);
      b.Collective(r, "comm" + sfx, "comm" + sfx, "tp" + (p ? sfx : "")).host_blocking = true;
    }
  }
  if (pairs > 1) {
    for (int p = 1; p < pairs; ++p) b.Pg("tp" + std::to_string(p), {0, 1});
  }
  return b.Build();
}

TEST(Explore, TaskQueuePerDeviceDeadlocks) {
  ExploreResult r = Sim(TaskQueue(QueueMode::kPerDevice));
  ASSERT_TRUE(r.deadlock);
  std::string w = Witness(r);
  EXPECT_THAT(w,
              HasSubstr("thread comm0 issues all_reduce (tp seq 0) to the device queue and blocks until it finishes"));
  EXPECT_THAT(w, HasSubstr("dispatcher of the device queue moves all_reduce (tp seq 0) to stream comm0 and waits for "
                           "it to finish"));
  std::string blocked = Joined(r.blocked);
  EXPECT_THAT(blocked, HasSubstr("device queue: dispatcher blocked in all_reduce (tp seq 0) (host-blocking) until it "
                                 "finishes; 1 entry behind it: record grad0_"));
  // On a stuck rank the all_reduce entered the queue before the record.
  bool before = false;
  for (std::string r : {"rank 0 ", "rank 1 "}) {
    size_t ar = w.find(r + "thread comm0 issues all_reduce"), rec = w.find(r + "thread compute0 issues record");
    if (ar != std::string::npos && rec != std::string::npos && ar < rec &&
        blocked.find(r + "device queue: dispatcher blocked in all_reduce") != std::string::npos)
      before = true;
  }
  EXPECT_TRUE(before) << w << blocked;
}

TEST(Explore, TaskQueueOffAndPerStreamPass) {
  for (QueueMode m : {QueueMode::kOff, QueueMode::kPerStream}) {
    ExploreResult r = Sim(TaskQueue(m));
    EXPECT_FALSE(r.deadlock) << model::QueueModeName(m) << "\n" << Joined(r.blocked);
    EXPECT_FALSE(r.bound_reached);
  }
}

// Partial-order reduction explores fewer states and keeps the verdict.
TEST(Explore, ReductionKeepsVerdictWithFewerStates) {
  for (QueueMode m : {QueueMode::kOff, QueueMode::kPerDevice, QueueMode::kPerStream}) {
    model::DeviceJob job = TaskQueue(m, 1);
    ExploreResult full = Sim(job, false), reduced = Sim(job, true);
    EXPECT_EQ(full.deadlock, reduced.deadlock) << model::QueueModeName(m);
    EXPECT_LT(reduced.states, full.states) << model::QueueModeName(m);
  }
}

TEST(Explore, BoundIsReportedNotAVerdict) {
  ExploreResult r = Sim(TaskQueue(QueueMode::kOff, 2), false, 10);
  EXPECT_FALSE(r.deadlock);
  EXPECT_TRUE(r.bound_reached);
  EXPECT_EQ(r.bound, "max states 10");
  EXPECT_EQ(r.states, 10);
}

// §7 in small: two collectives hold both AICPU units on each rank and wait
// for the other rank's, which wait for an event recorded after an AICPU op.
model::DeviceJob Pool(int capacity, bool hold) {
  DeviceJobBuilder b;
  for (const char* pg : {"g1", "g2", "g3", "g4"}) b.Pg(pg, {0, 1});
  for (model::Rank r : {0, 1}) {
    b.Pool(r, "aicpu", capacity);
    std::vector<std::string> first =
        r == 0 ? std::vector<std::string>{"g1", "g2"} : std::vector<std::string>{"g3", "g4"};
    std::vector<std::string> later =
        r == 0 ? std::vector<std::string>{"g3", "g4"} : std::vector<std::string>{"g1", "g2"};
    std::string e = "e" + std::to_string(r);
    for (const auto& g : first) b.Collective(r, "main", "s_" + g, g, "all_reduce", hold ? "aicpu" : "");
    b.Compute(r, "main", "aicpu_ops", "aicpu_op", "aicpu");
    b.Record(r, "main", "aicpu_ops", e);
    for (const auto& g : later) {
      b.Wait(r, "main", "s_" + g, e);
      b.Collective(r, "main", "s_" + g, g, "all_reduce", hold ? "aicpu" : "");
    }
  }
  return b.Build();
}

TEST(Explore, PoolHeldByWaitingCollectives) {
  ExploreResult r = Sim(Pool(2, true));
  ASSERT_TRUE(r.deadlock);
  EXPECT_THAT(Joined(r.blocked), HasSubstr("head aicpu_op cannot start: needs a unit of aicpu, all 2 held by "
                                           "all_reduce (g"));
  for (const auto& d : r.stuck.ranks) {
    ASSERT_EQ(d.pools.size(), 1u);
    EXPECT_EQ(d.pools[0].holders.size(), 2u);
  }
  EXPECT_FALSE(Sim(Pool(2, false)).deadlock);
  EXPECT_FALSE(Sim(Pool(3, true)).deadlock);
  EXPECT_EQ(Sim(Pool(3, true), false).deadlock, false);
}

TEST(Explore, HostSyncOnStreamWaitsForEarlierOps) {
  // Thread a: compute on s, host_sync on s. The compute can run: passes.
  DeviceJobBuilder b;
  b.Compute(0, "a", "s");
  b.SyncStream(0, "a", "s");
  b.Compute(0, "a", "s");
  EXPECT_FALSE(Sim(b.Build()).deadlock);
  // A host_sync on an event nobody records blocks for ever.
  DeviceJobBuilder c;
  c.SyncEvent(0, "a", "never");
  ExploreResult r = Sim(c.Build());
  EXPECT_TRUE(r.deadlock);
  EXPECT_THAT(Joined(r.blocked), HasSubstr("rank 0 thread a: blocked in host_sync on never: event never not recorded; "
                                           "nothing left records it"));
}

// An any-source recv that matches rank 1's send before rank 2's named recv
// from 1 takes that pair's seq 0 leaves the named recv without a send: a
// deadlock only in that order.
TEST(Explore, AnySourceMatchingOrder) {
  DeviceJobBuilder b;
  b.Pg("pp", {0, 1, 2});
  b.Send(0, "main", "comm", "pp", 2);
  b.Send(1, "main", "comm", "pp", 2);
  b.Recv(2, "main", "comm", "pp", -1);
  b.Recv(2, "main", "comm2", "pp", 1);
  for (bool por : {true, false}) {
    ExploreResult r = Sim(b.Build(), por);
    EXPECT_TRUE(r.deadlock) << por;
    EXPECT_THAT(Witness(r), HasSubstr("finishes recv from 1 (pp seq 0), matched with rank 1's send"));
  }
}

TEST(Explore, BadInput) {
  auto expect_error = [](model::DeviceJob j, const std::string& msg) {
    auto r = Explore(j);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr(msg));
  };
  {
    // device_json_fuzzer: queue mode off, yet a queue whose dispatcher is
    // blocked on a host-blocking op on a stream (indexed queue -1).
    model::DeviceJob j;
    model::DevOp w;
    w.kind = model::DevOp::Kind::kWait;
    w.rank = 0;
    w.thread = "comm";
    w.stream = "hccl";
    w.event = "e1";
    w.host_blocking = true;
    j.ops.push_back(w);
    j.finished.assign(1, false);
    model::DeviceRank r;
    r.rank = 0;
    r.threads.push_back({"comm", {}, 0});
    r.streams.push_back({"hccl", {0}, true});
    r.queues.push_back({"device", {}, 0});
    j.ranks.push_back(r);
    expect_error(j, "has a blocked dispatcher but the task queue mode is off");
  }
  {
    DeviceJobBuilder b;
    b.Collective(0, "main", "comm", "nope");
    expect_error(b.Build(), "pg 'nope' is not declared");
  }
  {
    DeviceJobBuilder b;
    b.Compute(0, "main", "s", "k", "aicpu");
    expect_error(b.Build(), "pool aicpu is not declared on rank 0");
  }
  {
    DeviceJobBuilder b;
    b.Pg("pp", {0, 1});
    b.Send(0, "main", "comm", "pp", -1);
    expect_error(b.Build(), "send needs a peer");
  }
  {
    DeviceJobBuilder b;
    b.Pg("tp", {1, 2});
    b.Collective(0, "main", "comm", "tp");
    expect_error(b.Build(), "rank 0 is not a member of pg tp");
  }
  {
    DeviceJobBuilder b;
    b.Compute(0, "main", "s");
    model::DeviceJob j = b.Build();
    j.ranks[0].threads[0].pending.push_back(0);
    expect_error(j, "is listed twice");
    j.ranks[0].threads[0].pending = {7};
    expect_error(j, "lists op 7, which does not exist");
  }
  {
    DeviceJobBuilder b;
    b.Wait(0, "main", "s", "");
    expect_error(b.Build(), "wait needs an event");
  }
}

// An op the device reported failed starts but never finishes.
TEST(Explore, FailedOpNeverFinishes) {
  DeviceJobBuilder b;
  b.Compute(0, "main", "s", "bad_kernel").failed = true;
  b.Record(0, "main", "s", "e");
  b.Wait(0, "main", "t", "e");
  ExploreResult r = Sim(b.Build());
  EXPECT_TRUE(r.deadlock);
  EXPECT_THAT(Witness(r), HasSubstr("rank 0 stream s starts bad_kernel"));
  EXPECT_THAT(Joined(r.blocked), HasSubstr("record e is on rank 0 stream s at position 1 behind bad_kernel"));
}

// A pg member with no schedule never arrives: the collective waits for it.
TEST(Explore, MissingMemberNeverArrives) {
  DeviceJobBuilder b;
  b.Pg("tp", {0, 1});
  b.Collective(0, "main", "comm", "tp");
  ExploreResult r = Sim(b.Build());
  EXPECT_TRUE(r.deadlock);
  EXPECT_THAT(Joined(r.blocked), HasSubstr("waits for rank 1: it has not issued its tp seq 0 collective"));
}

// Random small programs: partial-order reduction never changes the verdict,
// and never explores more states than the full search.
TEST(Explore, ReductionAgreesWithFullSearchOnRandomPrograms) {
  std::mt19937 rng(12345);
  int deadlocks = 0, passes = 0;
  int64_t full_states = 0, reduced_states = 0;
  for (int iter = 0; iter < 300; ++iter) {
    QueueMode mode = static_cast<QueueMode>(rng() % 3);
    DeviceJobBuilder b(mode);
    b.Pg("g", {0, 1});
    b.Pg("h", {0, 1});
    // One template for both ranks (so collectives and P2P mostly pair up),
    // with per-rank events, a random swap of two ops on rank 1 and random
    // send/recv order per rank.
    struct T {
      int kind, thread, stream, event, pg, pool, blocking, sync_event;
    };
    std::vector<T> tmpl;
    int n = 2 + static_cast<int>(rng() % 5);
    int recorded = 0;  // waits and host_syncs mostly use events recorded earlier in the template
    for (int k = 0; k < n; ++k) {
      T t{static_cast<int>(rng() % 7),
          static_cast<int>(rng() % 2),
          static_cast<int>(rng() % 3),
          static_cast<int>(rng() % 2),
          static_cast<int>(rng() % 2),
          rng() % 3 == 0,
          rng() % 5 == 0,
          static_cast<int>(rng() % 2)};
      if (t.kind == 1) recorded |= 1 << t.event;
      if ((t.kind == 2 || (t.kind == 6 && t.sync_event)) && !(recorded & (1 << t.event)) && rng() % 4) t.kind = 0;
      tmpl.push_back(t);
    }
    for (int r = 0; r < 2; ++r) {
      b.Pool(r, "aicpu", 1 + static_cast<int>(rng() % 2));
      std::vector<T> prog = tmpl;
      if (r == 1 && prog.size() > 1 && rng() % 2) {
        size_t i = rng() % (prog.size() - 1);
        std::swap(prog[i], prog[i + 1]);
      }
      for (const T& t : prog) {
        std::string th = "t" + std::to_string(t.thread), st = "s" + std::to_string(t.stream);
        std::string ev = "e" + std::to_string(t.event) + "_" + std::to_string(r), pg = t.pg ? "g" : "h";
        std::string pool = t.pool ? "aicpu" : "";
        model::DevOp* op = nullptr;
        switch (t.kind) {
          case 0:
            op = &b.Compute(r, th, st, "k", pool);
            break;
          case 1:
            op = &b.Record(r, th, st, ev);
            break;
          case 2:
            op = &b.Wait(r, th, st, ev);
            break;
          case 3:
            op = &b.Collective(r, th, st, pg, "all_reduce", pool);
            break;
          case 4:
          case 5: {
            bool send_first = (t.kind == 4) == (r == 0 || rng() % 2 == 0);
            if (send_first) b.Send(r, th, st, pg, 1 - r);
            op = send_first ? &b.Recv(r, th, st, pg, rng() % 4 == 0 ? -1 : 1 - r) : &b.Send(r, th, st, pg, 1 - r);
            if (!send_first) b.Recv(r, th, st, pg, 1 - r);
            break;
          }
          case 6:
            op = t.sync_event ? &b.SyncEvent(r, th, ev) : &b.SyncStream(r, th, st);
            break;
        }
        if (op->kind != model::DevOp::Kind::kHostSync && t.blocking) op->host_blocking = true;
      }
    }
    model::DeviceJob job = b.Build();
    ExploreResult full = Sim(job, false), reduced = Sim(job, true);
    ASSERT_FALSE(full.bound_reached);
    ASSERT_EQ(full.deadlock, reduced.deadlock) << "program " << iter << " mode " << model::QueueModeName(mode);
    // Every state the reduced search visits is reachable, so an exhaustive
    // full search visits it too (a search that stops at a deadlock may not).
    if (!full.deadlock) EXPECT_LE(reduced.states, full.states);
    (full.deadlock ? deadlocks : passes)++;
    if (!full.deadlock) full_states += full.states, reduced_states += reduced.states;
  }
  // The generator makes both outcomes, or the test would not test much.
  EXPECT_GT(deadlocks, 30);
  EXPECT_GT(passes, 30);
  EXPECT_LT(reduced_states, full_states);
  std::printf("%d deadlocks, %d passes; states of the passing ones: %lld full, %lld reduced\n", deadlocks, passes,
              static_cast<long long>(full_states), static_cast<long long>(reduced_states));
}

}  // namespace
}  // namespace hangdx::sim

namespace hangdx::sim {
namespace {

using model::testing::DeviceJobBuilder;

// 2,000 ranks, one collective each: the step cost was cubic in the ranks
// (every stream head re-checked every member), minutes for 10,000. Per
// rank: issue, start, finish (the last start finishes every one), so 6,000
// transitions and 6,001 states, no branching.
TEST(ExploreScale, TwoThousandRanksOneCollective) {
  DeviceJobBuilder b;
  std::vector<model::Rank> all;
  for (model::Rank r = 0; r < 2000; ++r) all.push_back(r);
  b.Pg("w", all);
  for (model::Rank r : all) b.Collective(r, "main", "comm", "w", "all_reduce");
  ExploreResult r = Sim(b.Build());
  EXPECT_FALSE(r.deadlock);
  EXPECT_FALSE(r.bound_reached) << r.bound;
  EXPECT_EQ(r.states, 6001);
  EXPECT_EQ(r.transitions, 6000);
}

// The search's work, counted rather than timed: a schedule with nothing to
// explore costs a few looks per transition, however many ranks it has (a
// scan of every stream, queue and thread per step made 32,768 ranks x 10
// ops take minutes). Three shapes: compute only; collectives over a pg of
// every rank (each finish lets every member finish); two threads per rank
// handing an event over, with host_syncs.
TEST(ExploreScale, WorkIsLinearInTheTransitions) {
  const model::Rank n = 3000;
  std::vector<model::Rank> all;
  for (model::Rank r = 0; r < n; ++r) all.push_back(r);
  DeviceJobBuilder compute, collectives, handover;
  collectives.Pg("w", all);
  for (model::Rank r : all) {
    for (int k = 0; k < 10; ++k) compute.Compute(r, "main", "s");
    for (int k = 0; k < 3; ++k) collectives.Collective(r, "main", "comm", "w");
    const std::string e = "e" + std::to_string(r);
    handover.Compute(r, "producer", "compute");
    handover.Record(r, "producer", "compute", e);
    handover.Wait(r, "consumer", "comm", e);
    handover.Compute(r, "consumer", "comm");
    handover.SyncStream(r, "consumer", "comm");
    handover.SyncEvent(r, "producer", e);
  }
  for (DeviceJobBuilder* b : {&compute, &collectives, &handover}) {
    ExploreResult r = Sim(b->Build(), true, int64_t{1} << 40);
    EXPECT_FALSE(r.deadlock);
    EXPECT_FALSE(r.bound_reached) << r.bound;
    EXPECT_GT(r.transitions, 5 * n);
    EXPECT_LT(r.examined, 6 * r.transitions) << r.transitions << " transitions";
    std::printf("%lld transitions, %lld examined\n", static_cast<long long>(r.transitions),
                static_cast<long long>(r.examined));
  }
  // Without reduction every part of the job is looked at in every state.
  ExploreResult full = Sim(compute.Build(), false, 100);
  EXPECT_GE(full.examined, 100 * n);
}

// The visited-state set is inside the memory bound: a search with room for
// billions of states but 1 MiB of memory stops at the bound, and says so.
TEST(ExploreScale, MemoryBoundHoldsTheVisitedStates) {
  ExploreOptions o;
  o.max_states = int64_t{1} << 40;
  o.max_memory_bytes = int64_t{1} << 20;
  o.partial_order_reduction = false;
  auto r = Explore(TaskQueue(QueueMode::kPerStream, 4), o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->deadlock);
  EXPECT_TRUE(r->bound_reached);
  EXPECT_THAT(r->bound, HasSubstr("memory: the search would exceed 1 MiB ("));
  EXPECT_LE(r->states, int64_t{1} << 15);  // 16-byte slots, at most half full
}

// A pg of 20 members of which only ranks 0-9 have a program: each started
// head waits for ranks 10-19; the blocked line names 8 and counts the rest.
// Witness: issue and start on each of the 10 ranks.
TEST(ExploreScale, BlockedLineNamesEightMembers) {
  DeviceJobBuilder b;
  std::vector<model::Rank> all;
  for (model::Rank r = 0; r < 20; ++r) all.push_back(r);
  b.Pg("w", all);
  for (model::Rank r = 0; r < 10; ++r) b.Collective(r, "main", "comm", "w", "all_reduce");
  ExploreResult r = Sim(b.Build());
  ASSERT_TRUE(r.deadlock);
  EXPECT_EQ(r.witness.size(), 20u);
  ASSERT_EQ(r.blocked.size(), 10u) << Joined(r.blocked);
  EXPECT_THAT(r.blocked[0], HasSubstr("; waits for rank 10: it has not issued its w seq 0 collective"));
  EXPECT_THAT(r.blocked[0], HasSubstr("; waits for rank 17: "));
  EXPECT_THAT(r.blocked[0], ::testing::Not(HasSubstr("rank 18:")));
  EXPECT_THAT(r.blocked[0], ::testing::EndsWith("; and for 2 more members"));
}

// A time bound already spent when compiling is reported as the bound, with
// no verdict.
TEST(ExploreScale, TimeBoundCoversEveryPhase) {
  DeviceJobBuilder b;
  b.Pg("w", {0, 1});
  for (model::Rank r : {0, 1}) b.Collective(r, "main", "comm", "w", "all_reduce");
  ExploreOptions o;
  o.max_seconds = 0;
  auto r = Explore(b.Build(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->deadlock);
  EXPECT_TRUE(r->bound_reached);
  EXPECT_EQ(r->bound, "max seconds 0");
}

// Many threads of one rank on one stream: their issues conflict (each
// order is a different stream), so the search branches; the conflict check
// counts users per key once per state. 3 threads, one compute each (a
// compute runs when it starts). A state is the finished set F and the ops
// on the stream in order. Full search: every F of size k with every ordered
// pick of the other 3-k: k=0: 1+3+6+6, k=1: 3*(1+2+2), k=2: 3*2, k=3: 1 = 38.
// Reduced: the start of a head is safe and taken at once, so the stream
// holds at most the op just issued: 8 sets F with an empty stream, plus
// (F, [x]) for x not in F: 3 + 3*2 + 3*1 = 12; 20 in all.
TEST(ExploreScale, ThreadsSharingAStreamBranch) {
  DeviceJobBuilder b;
  for (const char* t : {"a", "b", "c"}) b.Compute(0, t, "s");
  model::DeviceJob job = b.Build();
  ExploreResult with = Sim(job, true), without = Sim(job, false);
  EXPECT_FALSE(with.deadlock);
  EXPECT_FALSE(without.deadlock);
  EXPECT_FALSE(with.bound_reached);
  EXPECT_EQ(without.states, 38);
  EXPECT_EQ(with.states, 20);
}

}  // namespace
}  // namespace hangdx::sim
