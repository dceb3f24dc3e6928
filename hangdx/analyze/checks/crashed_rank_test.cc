#include "hangdx/analyze/checks/crashed_rank.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// Ranks 0-2 wait in seq 5 of pg 0; rank 3's log says it died of a CUDA error.
model::Job RankThreeCrashed() {
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 5, "all_reduce", false, {4, 4}, "Float", true);
  b.Event(3, model::LogEvent::Kind::kCrash, "CUDA error: an illegal memory access was encountered");
  return b.Members("0", {0, 1, 2, 3}).Build();
}

TEST(CrashedRankCheck, TheAwaitedRanksCrashIsTheCause) {
  model::Job job = RankThreeCrashed();
  std::vector<Finding> fs = RunCheck(&CrashedRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCrashedRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 5);
  EXPECT_EQ(f.summary,
            "ranks 0-2 wait in all_reduce (pg 0 (default_pg) seq 5) for rank 3, which crashed: CUDA error: an "
            "illegal memory access was encountered");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, Ranks{3});
  EXPECT_EQ(f.roles[1].ranks, (Ranks{0, 1, 2}));
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].file, "rank3.log");
  EXPECT_EQ(f.evidence[0].note, "line 3: CUDA error: an illegal memory access was encountered");
}

TEST(CrashedRankCheck, TheFindingWithoutAWaitSaysTheOthersWillWait) {
  model::Job job = RankThreeCrashed();
  RankAnalysis a = BuildRankAnalysis(job, {});
  Finding f = CrashedRankFinding(a, {3}, nullptr);
  EXPECT_EQ(f.summary,
            "rank 3 crashed (CUDA error: an illegal memory access was encountered); the other ranks of its process "
            "groups wait for it in their next collective");
  EXPECT_EQ(f.seq, -1);
}

TEST(CrashedRankCheck, NoCrashNoFinding) {
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce");
  EXPECT_TRUE(RunCheck(&CrashedRankCheck, b.Build()).empty());
}

// An exit by signal `sig` (a launcher's exit code -sig) of rank r.
model::LogEvent KilledBy(int64_t sig, bool first = false) {
  model::LogEvent e;
  e.kind = model::LogEvent::Kind::kExit;
  e.exit_code = -sig;
  e.message = "exitcode  : -" + std::to_string(sig) + " (pid: 100)";
  if (first) e.exit_role = model::LogEvent::ExitRole::kFirstFailure;
  return e;
}

TEST(CrashedRankCheck, EveryRankSeenCrashedNamesTheFirst) {
  // testdata/torch/torchrun_all_segv: all four ranks exit -11; torchrun's
  // root cause is rank 0.
  JobBuilder b;
  b.Event(0, KilledBy(11, true)).FromLog(0);
  for (int r = 1; r < 4; ++r) b.Event(r, KilledBy(11)).FromLog(r);
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  Finding f = CrashedRankFinding(a, {0, 1, 2, 3}, nullptr);
  EXPECT_EQ(f.kind, Kind::kCrashedRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{0});
  EXPECT_EQ(f.summary,
            "every rank seen crashed (killed by SIGSEGV): ranks 0-3; rank 0 first (killed by SIGSEGV, torchrun's first "
            "observed failure)");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(f.roles[1].role, "first to crash");
  EXPECT_EQ(f.evidence.size(), 4u);
}

TEST(CrashedRankCheck, EveryRankSeenCrashedWithoutTimesNamesThemAll) {
  // testdata/torch/all_segv: faulthandler's reports carry no time; the
  // first by time is known only when every crash line has one.
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Event(r, KilledBy(7)).FromLog(r);
  model::Job job = b.Build();
  Finding f = CrashedRankFinding(BuildRankAnalysis(job, {}), {0, 1}, nullptr);
  EXPECT_EQ(f.culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(f.summary, "every rank seen crashed (killed by SIGBUS): ranks 0-1; which one first the logs do not say");
  JobBuilder timed;
  for (int r = 0; r < 2; ++r) {
    model::LogEvent e = KilledBy(7);
    e.time_ns = (r == 1 ? 100 : 200);  // rank 1 first
    timed.Event(r, e).FromLog(r);
  }
  model::Job timed_job = timed.Build();
  f = CrashedRankFinding(BuildRankAnalysis(timed_job, {}), {0, 1}, nullptr);
  EXPECT_EQ(f.culprit_ranks, Ranks{1});
}

TEST(CrashedRankCheck, NoRankWaitingIsNoHang) {
  // Every rank seen crashed (all_segv): nobody waits, the job failed.
  JobBuilder all;
  for (int r = 0; r < 2; ++r) all.Event(r, KilledBy(11)).FromLog(r);
  model::Job all_job = all.Build();
  EXPECT_FALSE(CrashedRankFinding(BuildRankAnalysis(all_job, {}), {0, 1}, nullptr).hang);
  // Rank 1 crashed; rank 0's uncaught exception ended its process too
  // (a kExit of its traceback), with no op of it pending: no hang.
  JobBuilder b;
  b.Steps(0, "0", 1, 2);
  b.Event(1, KilledBy(11)).FromLog(1);
  b.Event(0, model::LogEvent::Kind::kExit, "RuntimeError: Connection closed by peer");
  model::Job job = b.Build();
  Finding f = CrashedRankFinding(BuildRankAnalysis(job, {}), {1}, nullptr);
  EXPECT_FALSE(f.hang);
  EXPECT_EQ(f.summary, "rank 1 crashed (killed by SIGSEGV); every other rank's process ended too: no rank is left "
                       "waiting");
  // Rank 0 still has an op pending: it may wait.
  JobBuilder p;
  p.Steps(0, "0", 1, 2);
  p.Coll(0, "0", 3, "all_reduce", false);  // in flight
  p.Event(1, KilledBy(11)).FromLog(1);
  p.Event(0, model::LogEvent::Kind::kExit, "RuntimeError: Connection closed by peer");
  model::Job pending = p.Build();
  EXPECT_TRUE(CrashedRankFinding(BuildRankAnalysis(pending, {}), {1}, nullptr).hang);
  // Rank 0 timed out (bcast_unpickle's sender): it waited for rank 1.
  JobBuilder t;
  t.Steps(0, "0", 1, 2);
  t.Event(1, KilledBy(11)).FromLog(1);
  t.Event(0, model::LogEvent::Kind::kExit, "RuntimeError: Timed out waiting 4000ms for recv operation to complete");
  model::Job timed_out = t.Build();
  EXPECT_TRUE(CrashedRankFinding(BuildRankAnalysis(timed_out, {}), {1}, nullptr).hang);
  // And a rank with no exit line may wait in its next collective.
  EXPECT_TRUE(CrashedRankFinding(BuildRankAnalysis(RankThreeCrashed(), {}), {3}, nullptr).hang);
}

TEST(CrashedRankCheck, TheRanksItsLauncherStoppedAreNamedNotWaiting) {
  // testdata/torch/torchrun_sigkill: rank 2 -9, the agent then SIGTERMs 0, 1, 3.
  JobBuilder b;
  b.Event(2, KilledBy(9, true)).FromLog(2);
  model::LogEvent stop;
  stop.kind = model::LogEvent::Kind::kExit;
  stop.exit_role = model::LogEvent::ExitRole::kStopped;
  for (int r : {0, 1, 3}) b.Event(r, stop).FromLog(r);
  model::Job job = b.Build();
  Finding f = CrashedRankFinding(BuildRankAnalysis(job, {}), {2}, nullptr);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.summary,
            "rank 2 crashed (killed by SIGKILL, torchrun's first observed failure); its launcher then stopped ranks "
            "0-1,3");
  EXPECT_FALSE(f.hang);  // every other process ended: the job failed, nobody hangs
}

// bcast_unpickle_empty (testdata/torch): rank 0 sent an object with
// broadcast_object_list (seq 1 the size, seq 2 the bytes) with its Flight
// Recorder off, so its dump records nothing; ranks 1,2 record both
// broadcasts (gloo: failed ops are retired) and crashed by themselves in the
// second, unable to rebuild the object. `crash`: their logs say so.
model::Job SenderRecordsNothing(bool crash) {
  JobBuilder b;
  for (int r : {1, 2}) {
    b.Coll(r, "0", 1, "broadcast");
    b.Coll(r, "0", 2, "broadcast", false, {118}, "Byte", true);
    if (crash) b.Event(r, model::LogEvent::Kind::kCrash, "RuntimeError: Numpy is not available");
  }
  b.Rank(0);  // a Flight Recorder dump with no entry
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  job.dumps[0].pg_config.clear();  // TORCH_FR_BUFFER_SIZE=0: pg_config {}, pg_status {}
  job.dumps[0].pg_status.clear();
  return job;
}

TEST(CrashedRankCheck, WaitersThatCrashedByThemselvesNotTheRankWhoseDumpRecordsNothing) {
  model::Job job = SenderRecordsNothing(true);
  std::vector<Finding> fs = RunCheck(&CrashedRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);  // seq 2 only: ranks 1,2 got past seq 1, so rank 0 took part in it
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCrashedRank);
  EXPECT_EQ(f.culprit_ranks, (Ranks{1, 2}));
  EXPECT_EQ(f.seq, 2);
  EXPECT_EQ(f.op, "broadcast");
  EXPECT_EQ(f.summary,
            "ranks 1-2 crashed by themselves in broadcast (pg 0 (default_pg) seq 2): RuntimeError: Numpy is not "
            "available; rank 0 recorded nothing (its dump holds no op): no evidence that it died or did not arrive");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{1, 2}));
  EXPECT_EQ(f.roles[1].role, "recorded nothing");
  EXPECT_EQ(f.roles[1].ranks, Ranks{0});
  EXPECT_EQ(f.evidence.size(), 2u);  // the two crash lines
}

TEST(CrashedRankCheck, WaitersCrashWithoutAnEmptyDumpIsNotThisCase) {
  // Without the crash lines: nobody crashed (missing_rank's undecided case).
  EXPECT_TRUE(RunCheck(&CrashedRankCheck, SenderRecordsNothing(false)).empty());
  // Rank 0's dump records its broadcasts and nothing after: it is elsewhere,
  // idle, the absent rank, whatever the others' crash (missing_rank's case).
  model::Job job = SenderRecordsNothing(true);
  job.dumps[0] = job.dumps[1];
  job.dumps[0].rank = 0;
  job.dumps[0].events.clear();
  job.dumps[0].ops.pop_back();
  EXPECT_TRUE(RunCheck(&CrashedRankCheck, job).empty());
}

}  // namespace
}  // namespace hangdx::analyze
