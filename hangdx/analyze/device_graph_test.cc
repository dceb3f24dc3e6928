#include "hangdx/analyze/device_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "hangdx/model/testing/device_job_builder.h"

namespace hangdx::analyze {
namespace {

using model::DevOp;
using model::OpId;
using model::QueueMode;
using model::Rank;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using Kd = DevOp::Kind;

using JobBuilder = model::testing::DeviceJobBuilder;

std::string Lines(const Finding& f) {
  std::string s = f.summary + "\n";
  for (const auto& d : f.details) s += "  " + d + "\n";
  return s;
}

// §3: stream s1 waits for A, which s2 records after its wait for B, which
// s1 records after its wait for A.
TEST(DeviceGraph, TwoStreamEventCycle) {
  JobBuilder b;
  OpId wb = b.Op(0, Kd::kWait, "s1", "B"), ra = b.Op(0, Kd::kRecord, "s1", "A");
  OpId wa = b.Op(0, Kd::kWait, "s2", "A"), rb = b.Op(0, Kd::kRecord, "s2", "B");
  b.Stream(0, "s1", {wb, ra}).Stream(0, "s2", {wa, rb});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.kind, Kind::kStreamCycle) << Lines(f);
  EXPECT_EQ(f.culprit_ranks, std::vector<Rank>{0});
  EXPECT_THAT(a.deadlocked, UnorderedElementsAre(wb, ra, wa, rb));
  // Four steps, starting at the lowest op: wait B -> record B (event) ->
  // wait A (stream order) -> record A (event) -> wait B (stream order).
  ASSERT_EQ(f.details.size(), 4u) << Lines(f);
  EXPECT_THAT(f.details[0], HasSubstr("wait B on stream s1 of rank 0 needs event B, recorded by record B on stream s2 "
                                      "of rank 0 at position 1"));
  EXPECT_THAT(f.details[1], HasSubstr("stream s2 of rank 0 runs in order: record B at position 1 is behind wait A at "
                                      "position 0"));
  EXPECT_THAT(f.details[2], HasSubstr("needs event A, recorded by record A"));
  EXPECT_THAT(f.details[3], HasSubstr("stream s1 of rank 0 runs in order: record A at position 1 is behind wait B"));
  EXPECT_EQ(f.evidence.size(), 4u);
  EXPECT_EQ(f.evidence[0].file, "test.json");
  EXPECT_FALSE(f.fix_hint.empty());
}

TEST(DeviceGraph, RecordBeforeWaitIsNoCycle) {
  JobBuilder b;
  OpId wb = b.Op(0, Kd::kWait, "s1", "B"), ra = b.Op(0, Kd::kRecord, "s1", "A");
  OpId rb = b.Op(0, Kd::kRecord, "s2", "B"), wa = b.Op(0, Kd::kWait, "s2", "A");
  b.Stream(0, "s1", {wb, ra}).Stream(0, "s2", {rb, wa});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  EXPECT_TRUE(a.findings.empty()) << Lines(a.findings[0]);
  EXPECT_TRUE(a.deadlocked.empty());
}

// §2: both ranks send first; NCCL sends wait for the recv.
TEST(DeviceGraph, P2pSendSendCycle) {
  JobBuilder b;
  b.Pg("pp", {0, 1});
  OpId s0 = b.Op(0, Kd::kSend, "comm", "pp", 1), r0 = b.Op(0, Kd::kRecv, "comm", "pp", 1);
  OpId s1 = b.Op(1, Kd::kSend, "comm", "pp", 0), r1 = b.Op(1, Kd::kRecv, "comm", "pp", 0);
  b.Stream(0, "comm", {s0, r0}).Stream(1, "comm", {s1, r1});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.kind, Kind::kP2pCycle) << Lines(f);
  EXPECT_EQ(f.cycle, (std::vector<Rank>{0, 1}));
  EXPECT_EQ(f.pg_name, "pp");
  EXPECT_THAT(f.details[0], HasSubstr("send to rank 1 on pp #0 on rank 0 needs rank 1 to start its recv from rank 0 "
                                      "on pp #0 (on stream comm of rank 1 at position 1)"));
  EXPECT_THAT(f.fix_hint, HasSubstr("batch_isend_irecv"));
  EXPECT_EQ(a.edges.size(), 2u);
}

TEST(DeviceGraph, P2pPairedByParityIsNoCycle) {
  JobBuilder b;
  b.Pg("pp", {0, 1});
  OpId s0 = b.Op(0, Kd::kSend, "comm", "pp", 1), r0 = b.Op(0, Kd::kRecv, "comm", "pp", 1);
  OpId r1 = b.Op(1, Kd::kRecv, "comm", "pp", 0), s1 = b.Op(1, Kd::kSend, "comm", "pp", 0);
  b.Stream(0, "comm", {s0, r0}).Stream(1, "comm", {r1, s1});
  EXPECT_TRUE(AnalyzeDevice(b.Build()).findings.empty());
}

// §5: the per-device queue holds record e1 behind thread B's host-blocking
// wait for e1, which the dispatcher is blocked on.
model::DeviceJob QueueJob(QueueMode mode, bool dispatched) {
  JobBuilder b(mode);
  OpId w = b.Op(0, Kd::kWait, "comm", "e1", -1, "", /*blocking=*/true);
  OpId r = b.Op(0, Kd::kRecord, "compute", "e1");
  b.Thread(0, "B", {}).Thread(0, "A", {});
  if (mode == QueueMode::kPerDevice) {
    if (dispatched)
      b.Queue(0, "device", {r}, w).Stream(0, "comm", {w});
    else
      b.Queue(0, "device", {w, r});
  } else {
    if (dispatched)
      b.Queue(0, "comm", {}, w).Stream(0, "comm", {w});
    else
      b.Queue(0, "comm", {w});
    b.Queue(0, "compute", {r});
  }
  return b.Build();
}

TEST(DeviceGraph, TaskQueueOrderDeadlock) {
  for (bool dispatched : {true, false}) {
    DeviceAnalysis a = AnalyzeDevice(QueueJob(QueueMode::kPerDevice, dispatched));
    ASSERT_EQ(a.findings.size(), 1u) << dispatched;
    const Finding& f = a.findings[0];
    EXPECT_EQ(f.kind, Kind::kTaskQueueDeadlock) << Lines(f);
    EXPECT_EQ(f.culprit_ranks, std::vector<Rank>{0});
    EXPECT_THAT(Lines(f), HasSubstr("the per-device task queue of rank 0"));
    EXPECT_THAT(Lines(f), HasSubstr("needs event e1, recorded by record e1"));
    EXPECT_THAT(f.fix_hint, HasSubstr("per_stream"));
    EXPECT_EQ(a.deadlocked.size(), 2u);
  }
}

TEST(DeviceGraph, PerStreamQueuesDoNotDeadlock) {
  for (bool dispatched : {true, false}) {
    DeviceAnalysis a = AnalyzeDevice(QueueJob(QueueMode::kPerStream, dispatched));
    EXPECT_TRUE(a.findings.empty()) << dispatched << " " << Lines(a.findings[0]);
    EXPECT_TRUE(a.deadlocked.empty());
  }
}

// §7 in small: two notify waits hold both AICPU units and wait for e1, which
// is recorded behind an AICPU operator that needs a unit.
model::DeviceJob PoolJob(int capacity) {
  JobBuilder b;
  OpId h1 = b.Op(0, Kd::kWait, "a", "e1", -1, "aicpu");
  OpId h2 = b.Op(0, Kd::kWait, "b", "e1", -1, "aicpu");
  OpId op = b.Op(0, Kd::kCompute, "c", "aicpu_op", -1, "aicpu");
  OpId rec = b.Op(0, Kd::kRecord, "c", "e1");
  b.Stream(0, "a", {h1}, true).Stream(0, "b", {h2}, true).Stream(0, "c", {op, rec});
  b.Pool(0, "aicpu", capacity, {h1, h2});
  return b.Build();
}

TEST(DeviceGraph, PoolHeldByWaitersDeadlocks) {
  DeviceAnalysis a = AnalyzeDevice(PoolJob(2));
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.kind, Kind::kResourceDeadlock) << Lines(f);
  EXPECT_THAT(f.summary, HasSubstr("pool aicpu of rank 0 (capacity 2)"));
  EXPECT_THAT(Lines(f), HasSubstr("pool aicpu of rank 0 (capacity 2) is held by wait e1, wait e1; aicpu_op at "
                                  "position 0 needs a unit"));
  // The knot: one unit is needed, and neither holder can free one.
  EXPECT_THAT(Lines(f), HasSubstr("needs 1 of its 2 holders to finish and none can"));
  EXPECT_EQ(a.deadlocked.size(), 4u);
  EXPECT_THAT(f.fix_hint, HasSubstr("fewer pgs in flight"));
}

TEST(DeviceGraph, PoolWithAFreeUnitDoesNotDeadlock) {
  DeviceAnalysis a = AnalyzeDevice(PoolJob(3));
  EXPECT_TRUE(a.findings.empty()) << Lines(a.findings[0]);
  EXPECT_TRUE(a.deadlocked.empty());
}

// An any-source recv deadlocks when its only sender waits behind it, and
// not once another rank sends.
model::DeviceJob AnySourceJob(bool third_sender) {
  JobBuilder b;
  b.Pg("w", third_sender ? std::vector<Rank>{0, 1, 2} : std::vector<Rank>{0, 1});
  OpId any = b.Op(0, Kd::kRecv, "s", "w", -1), s01 = b.Op(0, Kd::kSend, "s", "w", 1);
  OpId r10 = b.Op(1, Kd::kRecv, "s", "w", 0), s10 = b.Op(1, Kd::kSend, "s", "w", 0);
  b.Stream(0, "s", {any, s01}).Stream(1, "s", {r10, s10});
  if (third_sender) b.Stream(2, "s", {b.Op(2, Kd::kSend, "s", "w", 0)});
  return b.Build();
}

TEST(DeviceGraph, AnySourceRecvWithOneLiveSender) {
  DeviceAnalysis stuck = AnalyzeDevice(AnySourceJob(false));
  ASSERT_EQ(stuck.findings.size(), 1u);
  EXPECT_EQ(stuck.findings[0].kind, Kind::kP2pCycle) << Lines(stuck.findings[0]);
  DeviceAnalysis live = AnalyzeDevice(AnySourceJob(true));
  EXPECT_TRUE(live.findings.empty()) << Lines(live.findings[0]);
  EXPECT_TRUE(live.deadlocked.empty());
}

// A member that never issues the collective: missing, not a cycle.
TEST(DeviceGraph, CollectiveMemberNeverIssuesIt) {
  JobBuilder b;
  b.Pg("tp", {0, 1, 2});
  OpId c0 = b.Op(0, Kd::kCollective, "comm", "tp"), c1 = b.Op(1, Kd::kCollective, "comm", "tp");
  OpId other = b.Op(2, Kd::kCompute, "compute", "checkpoint");
  b.Stream(0, "comm", {c0}, true).Stream(1, "comm", {c1}, true).Stream(2, "compute", {other}, true);
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  EXPECT_TRUE(a.deadlocked.empty());
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, std::vector<Rank>{2});
  EXPECT_EQ(f.pg_name, "tp");
  EXPECT_EQ(f.seq, 0);
  EXPECT_THAT(f.summary, HasSubstr("rank 2 never issues all_reduce tp seq 0; ranks 0-1 wait for it"));
  EXPECT_THAT(Lines(f), HasSubstr("rank 2 instead: stream compute is at checkpoint (started)"));
  EXPECT_THAT(a.waiting_on_missing, ElementsAre(c0, c1));
}

TEST(DeviceGraph, WaitForAnEventNobodyRecords) {
  JobBuilder b;
  OpId w = b.Op(0, Kd::kWait, "comm", "e7");
  b.Stream(0, "comm", {w});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, Kind::kUndecided);
  EXPECT_THAT(a.findings[0].summary, HasSubstr("event e7, which no op records"));
}

// Two pgs issued in opposite orders on two ranks.
TEST(DeviceGraph, OrderInversionAcrossPgs) {
  JobBuilder b;
  b.Pg("A", {0, 1}).Pg("B", {0, 1});
  OpId a0 = b.Op(0, Kd::kCollective, "s", "A"), b0 = b.Op(0, Kd::kCollective, "s", "B");
  OpId b1 = b.Op(1, Kd::kCollective, "s", "B"), a1 = b.Op(1, Kd::kCollective, "s", "A");
  b.Stream(0, "s", {a0, b0}).Stream(1, "s", {b1, a1});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, Kind::kOrderInversion) << Lines(a.findings[0]);
  EXPECT_THAT(a.findings[0].summary, HasSubstr("pgs A, B are issued in different orders on ranks 0-1"));
  EXPECT_THAT(a.findings[0].details[0], HasSubstr("all_reduce A seq 0 on rank 0 needs rank 1 to start its all_reduce "
                                                  "A seq 0"));
}

// A thread blocked on a host_sync for an event that its own next op would
// record: a wait cycle through the host.
TEST(DeviceGraph, HostSyncBeforeItsRecord) {
  JobBuilder b;
  OpId sync = b.Op(0, Kd::kHostSync, "", "e1");
  OpId rec = b.Op(0, Kd::kRecord, "s", "e1");
  b.Thread(0, "main", {rec}, sync);
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, Kind::kStreamCycle) << Lines(a.findings[0]);
  EXPECT_THAT(Lines(a.findings[0]), HasSubstr("thread main of rank 0 is blocked on host_sync e1"));
  EXPECT_FALSE(a.schedule);
}

// Nothing issued: a schedule; what deadlocks in every interleaving is
// still found, and a note points to the simulator.
TEST(DeviceGraph, ScheduleIsSaidAndStillChecked) {
  JobBuilder b;
  b.Pg("pp", {0, 1});
  OpId s0 = b.Op(0, Kd::kSend, "comm", "pp", 1), r0 = b.Op(0, Kd::kRecv, "comm", "pp", 1);
  OpId s1 = b.Op(1, Kd::kSend, "comm", "pp", 0), r1 = b.Op(1, Kd::kRecv, "comm", "pp", 0);
  b.Thread(0, "main", {s0, r0}).Thread(1, "main", {s1, r1});
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  EXPECT_TRUE(a.schedule);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].kind, Kind::kP2pCycle);
  EXPECT_EQ(a.findings[1].severity, Severity::kInfo);
  EXPECT_THAT(a.findings[1].summary, HasSubstr("hangdx simulate test.json"));
  std::vector<std::string> lines = ExplainDevice(b.Build());
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines[0], HasSubstr("p2p_cycle: P2P ops wait for each other"));
}

// Cross-thread orders that the snapshot does not fix get no edge: two
// threads' pending ops feeding one queue are not called a deadlock.
TEST(DeviceGraph, UnknownInterleavingIsNotADeadlock) {
  JobBuilder b(QueueMode::kPerDevice);
  OpId w = b.Op(0, Kd::kWait, "comm", "e1", -1, "", true);
  OpId r = b.Op(0, Kd::kRecord, "compute", "e1");
  b.Thread(0, "B", {w}).Thread(0, "A", {r});
  EXPECT_TRUE(AnalyzeDevice(b.Build()).deadlocked.empty());
}

// Bad ids and inconsistent state never crash.
TEST(DeviceGraph, InconsistentInputIsTolerated) {
  JobBuilder b;
  b.Pg("tp", {0, 5});
  OpId c = b.Op(0, Kd::kCollective, "s", "tp");
  b.Stream(0, "s", {c, 77, -3}, true).Thread(0, "main", {c, 1000}, 99).Pool(0, "p", 0, {c, -1, 123});
  b.Queue(0, "device", {c, 5000}, 4000);
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, Kind::kUndecided);  // rank 5 has no data
  EXPECT_EQ(a.findings[0].culprit_ranks, std::vector<Rank>{5});
  model::DeviceJob empty;
  EXPECT_TRUE(AnalyzeDevice(empty).findings.empty() || AnalyzeDevice(empty).schedule);
}

// 100,000 ops: a ring of 50,000 ranks, each sending to the next before
// receiving from the previous. One cycle through every rank.
TEST(DeviceGraph, LargeRingIsLinear) {
  JobBuilder b;
  const Rank n = 50000;
  std::vector<Rank> all(n);
  for (Rank r = 0; r < n; ++r) all[r] = r;
  b.Pg("ring", all);
  for (Rank r = 0; r < n; ++r) {
    OpId s = b.Op(r, Kd::kSend, "comm", "ring", (r + 1) % n);
    OpId v = b.Op(r, Kd::kRecv, "comm", "ring", (r + n - 1) % n);
    b.Stream(r, "comm", {s, v});
  }
  DeviceAnalysis a = AnalyzeDevice(b.Build());
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, Kind::kP2pCycle);
  EXPECT_EQ(a.findings[0].cycle.size(), static_cast<size_t>(n));
  EXPECT_EQ(a.deadlocked.size(), static_cast<size_t>(2 * n));
}

TEST(DescribeDevOp, Names) {
  DevOp op;
  op.kind = Kd::kCollective;
  op.name = "all_reduce";
  op.pg = "tp";
  op.seq = 3;
  EXPECT_EQ(DescribeDevOp(op), "all_reduce tp seq 3");
  op.kind = Kd::kRecv;
  op.peer = -1;
  EXPECT_EQ(DescribeDevOp(op), "recv from any rank on tp #3");
  op.kind = Kd::kWait;
  op.event = "e1";
  op.name = "notify_wait";
  EXPECT_EQ(DescribeDevOp(op), "notify_wait e1");
}

}  // namespace
}  // namespace hangdx::analyze
