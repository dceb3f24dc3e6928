#include "hangdx/analyze/analyze.h"

#include <gtest/gtest.h>

#include <functional>

#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

TEST(Analyze, RankDependentBranchBlamesTheAbsentRank) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 5, "all_reduce");  // gloo: timed out, retired
  Diagnosis d = Analyze(b.Build());
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 5);
  EXPECT_TRUE(d.hang);
  EXPECT_EQ(d.verdict.rfind("HANG", 0), 0u) << d.verdict;
  EXPECT_EQ(d.findings.size(), 1u);
}

TEST(Analyze, MajorityIsTheReferenceNotTheFirstFile) {
  // Flaw §3.9.1: fr_trace compares with the first file; if rank 0 is the odd
  // one out, it blames every healthy rank.
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce", true, {1});
  for (int r = 1; r < 4; ++r) b.Coll(r, "0", 3, "all_reduce", true, {4, 4});
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kSizeMismatch);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(d.findings[0].seq, 3);
}

TEST(Analyze, DtypeMismatchIsASizeMismatchKind) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce").Coll(1, "0", 3, "all_reduce").Coll(2, "0", 3, "all_reduce", true, {4, 4}, "Half");
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kSizeMismatch);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{2});
  EXPECT_NE(d.findings[0].summary.find("dtype"), std::string::npos) << d.findings[0].summary;
}

TEST(Analyze, TypeMismatchTieBrokenByHistory) {
  // Two ranks, one each side: the side that does what this pg usually does
  // is the reference, whichever rank it is.
  for (int deviant : {0, 1}) {
    JobBuilder b;
    for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 4);
    b.Coll(deviant, "0", 5, "broadcast", true, {1});
    b.Coll(1 - deviant, "0", 5, "all_reduce");
    Diagnosis d = Analyze(b.Build());
    ASSERT_FALSE(d.findings.empty());
    EXPECT_EQ(d.findings[0].kind, Kind::kCollectiveMismatch);
    EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{deviant});
    EXPECT_EQ(d.findings[0].op, "all_reduce");
  }
}

TEST(Analyze, OneMismatchDoesNotPoisonLaterSeqs) {
  // Flaw §3.9.3: after a mismatch fr_trace reports every later seq of the pg
  // as undecidable. Here seq 2 mismatched (and errored), seqs 3-5 are fine,
  // and seq 6 is where rank 2 went missing.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 1);
  b.Coll(0, "0", 2, "all_reduce").Coll(1, "0", 2, "all_reduce").Coll(2, "0", 2, "all_reduce", true, {8});
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 3, 5);
  b.Coll(0, "0", 6, "all_reduce").Coll(1, "0", 6, "all_reduce");
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 2u);
  std::vector<std::pair<int64_t, Kind>> got;
  for (const auto& f : d.findings) got.push_back({f.seq, f.kind});
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got[0], std::make_pair(int64_t{2}, Kind::kSizeMismatch));
  EXPECT_EQ(got[1], std::make_pair(int64_t{6}, Kind::kMissingRank));
}

TEST(Analyze, SamePgNameDifferentRanksAreTwoGroups) {
  // PyTorch testBuildDB case 1: pg "1" is [0] on rank 0 and [1] on rank 1.
  JobBuilder b("nccl");
  b.Coll(0, "0", 1, "all_reduce").Coll(1, "0", 1, "all_reduce");
  b.Coll(0, "1", 1, "all_reduce", true, {5, 5}).Coll(1, "1", 1, "all_reduce", true, {6, 6});
  model::Job job = b.Members("0", {0, 1}).Build();
  for (auto& dump : job.dumps) dump.pg_config["1"] = {"1", "sub_pg", std::vector<model::Rank>{dump.rank}, true};
  Diagnosis d = Analyze(job);
  EXPECT_TRUE(d.findings.empty()) << d.findings[0].summary;
  EXPECT_EQ(d.pgs.size(), 3u);
  EXPECT_FALSE(d.hang);
}

// PyTorch's FlightRecorderE2ETest.testBuildDB cases 2-6 (flight-recorder.md
// §4): coalesced groups share one seq and are matched as a whole.
model::Job TwoRanks(const std::function<void(JobBuilder&)>& fill) {
  JobBuilder b("nccl");
  fill(b);
  return b.Members("0", {0, 1}).Build();
}

TEST(Analyze, PyTorchBuildDbCoalescedCases) {
  // 2: allreduce_coalesced on both ranks.
  EXPECT_TRUE(Analyze(TwoRanks([](JobBuilder& b) {
                for (int r : {0, 1}) b.Coll(r, "0", 1, "allreduce_coalesced");
              })).findings.empty());
  // 3: broadcast, broadcast, coalesced (one seq) on both.
  EXPECT_TRUE(Analyze(TwoRanks([](JobBuilder& b) {
                for (int r : {0, 1})
                  b.Coll(r, "0", 1, "broadcast").Coll(r, "0", 1, "broadcast").Coll(r, "0", 1, "coalesced");
              })).findings.empty());
  // 4: _broadcast_oop sizes differ inside an ALLGATHER_coalesced group.
  Diagnosis d4 = Analyze(TwoRanks([](JobBuilder& b) {
    b.Coll(0, "0", 1, "_broadcast_oop", true, {4, 4}).Coll(0, "0", 1, "_broadcast_oop", true, {5, 5});
    b.Coll(0, "0", 1, "ALLGATHER_coalesced");
    b.Coll(1, "0", 1, "_broadcast_oop", true, {4, 4}).Coll(1, "0", 1, "_broadcast_oop", true, {4, 4});
    b.Coll(1, "0", 1, "ALLGATHER_coalesced");
  }));
  ASSERT_EQ(d4.findings.size(), 1u);
  EXPECT_EQ(d4.findings[0].kind, Kind::kSizeMismatch);
  EXPECT_EQ(d4.findings[0].seq, 1);
  // 5: _reduce_oop x2 + REDUCE_SCATTER_coalesced on both.
  EXPECT_TRUE(
      Analyze(TwoRanks([](JobBuilder& b) {
        for (int r : {0, 1})
          b.Coll(r, "0", 1, "_reduce_oop").Coll(r, "0", 1, "_reduce_oop").Coll(r, "0", 1, "REDUCE_SCATTER_coalesced");
      })).findings.empty());
  // 6: rank 1 goes on to a coalesced group rank 0 never joins. fr_trace
  // marks it "pass_check True" (flaw §3.9.2); hangdx names rank 0.
  Diagnosis d6 = Analyze(TwoRanks([](JobBuilder& b) {
    b.Coll(0, "0", 1, "all_reduce").Coll(1, "0", 1, "all_reduce");
    b.Coll(1, "0", 2, "_reduce_oop").Coll(1, "0", 2, "_reduce_oop").Coll(1, "0", 2, "REDUCE_SCATTER_coalesced");
  }));
  ASSERT_EQ(d6.findings.size(), 1u);
  EXPECT_EQ(d6.findings[0].kind, Kind::kMissingRank);
  EXPECT_EQ(d6.findings[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(d6.findings[0].seq, 2);
}

TEST(Analyze, UnknownBackendsAndOpsDoNotAbort) {
  // fr_trace asserts on an unknown backend or op name (§3.9.9).
  JobBuilder b("mybackend");
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 1, "fancy_new_collective");
  b.Coll(0, "0", 2, "fancy_new_collective").Coll(1, "0", 2, "fancy_new_collective");
  Diagnosis d = Analyze(b.Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kMissingRank);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{2});
}

TEST(Analyze, P2PSendSendCycle) {
  JobBuilder b("nccl");
  b.Steps(0, "0", 1, 2).Steps(1, "0", 1, 2);
  b.P2P(0, "0", "send 0->1").P2P(0, "0", "recv 0<-1");
  b.P2P(1, "0", "send 1->0").P2P(1, "0", "recv 1<-0");
  Diagnosis d = Analyze(b.Members("0", {0, 1}).Build());
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, Kind::kP2pCycle);
  EXPECT_EQ(f.cycle, (Ranks{0, 1}));
  EXPECT_EQ(f.culprit_ranks, (Ranks{0, 1}));
}

TEST(Analyze, MatchedP2PIsNotACycle) {
  JobBuilder b("nccl");
  b.P2P(0, "0", "send 0->1").P2P(0, "0", "recv 0<-1");
  b.P2P(1, "0", "recv 1<-0").P2P(1, "0", "send 1->0");
  Diagnosis d = Analyze(b.Members("0", {0, 1}).Build());
  for (const auto& f : d.findings) EXPECT_NE(f.kind, Kind::kP2pCycle) << f.summary;
}

TEST(Analyze, OrderInversionAcrossTwoPgs) {
  // Gloo-style: members inferred from history (both ranks used both pgs),
  // then rank 0 calls pg A before B and rank 1 B before A.
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Steps(r, "1", 1, 2).Steps(r, "2", 1, 2);
  b.Coll(0, "1", 3, "all_reduce");  // timed out
  b.Coll(1, "2", 3, "all_reduce");
  Diagnosis d = Analyze(b.Build());
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, Kind::kOrderInversion);
  EXPECT_EQ(f.culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(f.cycle, (Ranks{0, 1}));
  EXPECT_EQ(d.findings.size(), 1u) << d.findings[1].summary;
}

TEST(Analyze, CascadeNamesTheRootNotTheChain) {
  // rank 0 waits in pg A for rank 1; rank 1 waits in pg B for rank 2; rank 2
  // is idle. One root finding (rank 2), rank 0 blocked behind it.
  JobBuilder b("nccl");
  b.Steps(0, "A", 1, 2).Steps(1, "A", 1, 2).Steps(1, "B", 1, 1).Steps(2, "B", 1, 1);
  b.Coll(0, "A", 3, "all_reduce", false, {4, 4}, "Float", true);
  b.Coll(1, "B", 2, "all_reduce", false, {4, 4}, "Float", true);
  model::Job job = b.Build();
  for (auto& dump : job.dumps) {
    dump.pg_config["A"] = {"A", "undefined", std::vector<model::Rank>{0, 1}, true};
    dump.pg_config["B"] = {"B", "undefined", std::vector<model::Rank>{1, 2}, true};
  }
  Diagnosis d = Analyze(job);
  ASSERT_EQ(d.findings.size(), 1u) << d.findings[1].summary;
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.pg_name, "B");
  EXPECT_EQ(f.blocked_behind, Ranks{0});
}

TEST(Analyze, DeadRankWithoutDump) {
  JobBuilder b;
  for (int r : {0, 1, 3}) b.Steps(r, "0", 1, 5);
  Diagnosis d = Analyze(b.World(4).Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{2});
  EXPECT_EQ(d.ranks_without_dump, Ranks{2});
}

TEST(Analyze, MostDumpsMissingIsUndecided) {
  JobBuilder b;
  b.Steps(0, "0", 1, 5);
  Diagnosis d = Analyze(b.World(8).Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kUndecided);
  EXPECT_NE(d.findings[0].summary.find("1-7"), std::string::npos) << d.findings[0].summary;
}

TEST(Analyze, SlowRankIsAStragglerNotAHang) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 5, "all_reduce", /*done=*/false);
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kStraggler);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{3});
  EXPECT_FALSE(d.hang);
  AnalyzeOptions strict;
  strict.assume_timed_out = true;
  EXPECT_EQ(Analyze(b.Build(), strict).findings[0].kind, Kind::kMissingRank);
}

TEST(Analyze, HealthyJob) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 6);
  Diagnosis d = Analyze(b.Build());
  EXPECT_TRUE(d.findings.empty());
  EXPECT_FALSE(d.hang);
  EXPECT_EQ(d.verdict.rfind("No hang found", 0), 0u) << d.verdict;
}

TEST(Analyze, AllRanksAgreeButStuckIsNotNoErrors) {
  // Flaw §3.9.8: every rank is in the same all_reduce and none finished;
  // fr_trace says "No errors found". hangdx names the (pg, seq).
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 6).Coll(r, "0", 7, "all_reduce", false, {4, 4}, "Float", true);
  Diagnosis d = Analyze(b.Members("0", {0, 1, 2, 3}).Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].seq, 7);
  EXPECT_EQ(d.findings[0].pg_name, "0");
  EXPECT_EQ(d.pgs[0].stuck_seq, 7);
}

TEST(Analyze, WaitSnapshotCycleAndMissing) {
  JobBuilder b;
  b.Wait(0, "send", {1}).Wait(1, "send", {0}).Wait(2, "recv", {0});
  Diagnosis d = Analyze(b.Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kP2pCycle);
  EXPECT_EQ(d.findings[0].cycle, (Ranks{0, 1}));
  EXPECT_EQ(d.findings[0].blocked_behind, Ranks{2});

  JobBuilder m;
  m.Wait(0, "all_reduce", {3}, 41)
      .Wait(1, "all_reduce", {3}, 41)
      .Wait(2, "all_reduce", {3}, 41)
      .Wait(3, "checkpoint", {}, 40);
  model::Job job = m.Build();
  // One snapshot: waiting, not deadlocked (rank 3 may only be slow).
  Diagnosis d2 = Analyze(job);
  ASSERT_EQ(d2.findings.size(), 1u);
  EXPECT_EQ(d2.findings[0].kind, Kind::kStraggler);
  EXPECT_FALSE(d2.hang);
  EXPECT_EQ(d2.findings[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(d2.findings[0].roles[0].ranks, (Ranks{0, 1, 2}));
  // With time: rank 1 has waited past the stall threshold.
  for (auto& dump : job.dumps)
    if (dump.rank == 1) dump.wait->waited_ms = 45000;
  Diagnosis d3 = Analyze(job);
  ASSERT_EQ(d3.findings.size(), 1u);
  EXPECT_EQ(d3.findings[0].kind, Kind::kMissingRank);
  EXPECT_TRUE(d3.hang);
  EXPECT_EQ(d3.findings[0].culprit_ranks, Ranks{3});
}

TEST(Analyze, WaitSnapshotMixedCycleIsAWaitCycle) {
  JobBuilder b;
  b.Wait(0, "all_reduce", {1}).Wait(1, "event_wait", {2}).Wait(2, "recv", {0});
  Diagnosis d = Analyze(b.Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kWaitCycle);
  EXPECT_EQ(d.findings[0].cycle, (Ranks{0, 1, 2}));
}

TEST(Analyze, StacksInDifferentCollectivesNameTheMinority) {
  // The shape of sglang#27489: TP0 in all_reduce under writing_check, TP1-3
  // in the next iteration's broadcast.
  JobBuilder b;
  b.Stack(0, {"all_reduce", "writing_check", "check_hicache_events", "event_loop_overlap"});
  for (int r = 1; r < 4; ++r) b.Stack(r, {"broadcast", "broadcast_pyobj", "recv_requests", "event_loop_overlap"});
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(d.findings[0].op, "broadcast");
  EXPECT_EQ(d.findings[0].evidence.size(), 4u);
}

TEST(Analyze, StackOutsideAnyCollectiveIsTheMissingRank) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Stack(r, {"wait", "all_reduce", "train_step"});
  b.Stack(3, {"save", "save_checkpoint", "train_step"});
  Diagnosis d = Analyze(b.Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kMissingRank);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{3});
}

TEST(Analyze, CrashEventMakesACrashedRank) {
  // Ranks 0-2 wait at seq 5; rank 3's log says it died of a CUDA error.
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 5, "all_reduce", false, {4, 4}, "Float", true);
  b.Event(3, model::LogEvent::Kind::kCrash, "CUDA error: an illegal memory access was encountered");
  Diagnosis d = Analyze(b.Members("0", {0, 1, 2, 3}).Build());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(d.findings[0].seq, 5);
  // A crash alone (vllm#6042: only the dying rank's log) is still named.
  JobBuilder c;
  c.Event(3, model::LogEvent::Kind::kCrash, "CUDA error: an illegal memory access was encountered").FromLog(3);
  Diagnosis d2 = Analyze(c.Build());
  ASSERT_EQ(d2.findings.size(), 1u);
  EXPECT_EQ(d2.findings[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(d2.findings[0].culprit_ranks, Ranks{3});
}

TEST(Analyze, SilentRankInLogsIsMissingNotDead) {
  // ace#348: ranks 1-3 log a watchdog timeout at one seq, rank 0 logs
  // nothing. From logs (no Flight Recorder dumps), silence means "not
  // waiting in it", not "dead".
  JobBuilder b("nccl");
  for (int r = 1; r < 4; ++r) b.Coll(r, "0", 1132079, "all_reduce", false, {304640}, "Float", true).FromLog(r);
  Diagnosis d = Analyze(b.World(4).Build());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, Kind::kMissingRank);
  EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(d.findings[0].seq, 1132079);
}

TEST(Analyze, DetailMismatchEventsMakeItAnErrorNotAHang) {
  // TORCH_DISTRIBUTED_DEBUG=DETAIL (testdata/torch/c_detail): each rank's
  // fingerprint at seq 3 and each rank's "Detected mismatch" line there.
  JobBuilder b("gloo");
  for (int r = 0; r < 3; ++r) {
    b.Coll(r, "0", 3, r == 2 ? "broadcast" : "all_reduce", false, {8}).FromLog(r);
    b.Event(r, model::LogEvent::Kind::kMismatch, "Detected mismatch between collectives on ranks.");
  }
  model::Job job = b.World(3).Build();
  for (auto& d : job.dumps) d.events[0].pg = "0", d.events[0].seq = 3;
  Diagnosis d = Analyze(job);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 3);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_FALSE(f.hang);  // the wrapper raised on every rank: no one waits
  EXPECT_EQ(f.evidence.front().file, "rank0.log");
  EXPECT_EQ(d.verdict.rfind("ERROR (mismatch, raised; no hang)", 0), 0u) << d.verdict;
  // The same ops without the events (a mismatch nobody detected) hang.
  for (auto& dump : job.dumps) dump.events.clear();
  EXPECT_TRUE(Analyze(job).findings[0].hang);
  // Events at another seq say nothing about this one.
  model::LogEvent other;
  other.kind = model::LogEvent::Kind::kMismatch;
  other.message = "x";
  other.pg = "0";
  other.seq = 9;
  for (auto& dump : job.dumps) dump.events.push_back(other);
  EXPECT_TRUE(Analyze(job).findings[0].hang);
}

// Every rank the diagnosis lists is below its world_size, also when the
// world is unknown (tester's tlog/bigrank.log: timeouts of ranks 0 and
// 16777215; rank_bounds.py: rank 0 waits for rank 16777215).
TEST(Analyze, AnUnknownWorldIsStillLargerThanEveryRankListed) {
  constexpr model::Rank kFar = 16777215;
  JobBuilder two;
  for (model::Rank r : {model::Rank{0}, kFar}) two.Steps(r, "0", 1, 4).Coll(r, "0", 5, "all_reduce", false);
  Diagnosis d = Analyze(two.Build());
  EXPECT_EQ(d.world_size, kFar + 1);  // was 2, the number of dumps
  EXPECT_TRUE(d.world_size_inferred);
  EXPECT_TRUE(d.ranks_without_dump.empty());  // not listed one by one
  EXPECT_EQ(HighestRankListed(d), kFar);
  Diagnosis w = Analyze(JobBuilder().Wait(0, "all_reduce", {kFar}, 7).Build());
  EXPECT_EQ(w.world_size, kFar + 1);  // the edge 0 -> 16777215 is listed (was 1)
  // A known world is left as it is: 3 given, ranks 0 and 2 dumped.
  Diagnosis k = Analyze(JobBuilder().Steps(0, "0", 1, 1).Steps(2, "0", 1, 1).World(3).Build());
  EXPECT_EQ(k.world_size, 3);
  EXPECT_EQ(k.ranks_without_dump, Ranks{1});
}

}  // namespace
}  // namespace hangdx::analyze
