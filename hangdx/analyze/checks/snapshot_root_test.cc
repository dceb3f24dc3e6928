#include "hangdx/analyze/checks/snapshot_root.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// Sets rank `r`'s waited_ms (and stall_after_ms when > 0) in `job`.
void Waited(model::Job* job, model::Rank r, int64_t ms, int64_t stall_after_ms = -1) {
  for (auto& d : job->dumps)
    if (d.rank == r) {
      d.wait->waited_ms = ms;
      d.wait->stall_after_ms = stall_after_ms;
    }
}

TEST(SnapshotRootCheck, WaitersOfAnIdleRankShareOneFindingPerOp) {
  // Ranks 0-2 wait in all_reduce seq 41 for rank 3, which checkpoints; rank
  // 4 waits for rank 3 in a barrier: a second finding. They have waited
  // past the stall threshold (default 30 s): a hang.
  JobBuilder b;
  b.Wait(0, "all_reduce", {3}, 41).Wait(1, "all_reduce", {3}, 41).Wait(2, "all_reduce", {3}, 41);
  b.Wait(3, "checkpoint", {}, 40).Wait(4, "barrier", {3});
  model::Job job = b.Build();
  for (model::Rank r : {0, 1, 2, 4}) Waited(&job, r, 31000 + r);
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, job);
  ASSERT_EQ(fs.size(), 2u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.seq, 41);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2}));
  EXPECT_EQ(f.roles[1].role, "not waiting");
  EXPECT_EQ(f.summary, "ranks 0-2 wait in all_reduce for rank 3, which is not waiting on anyone (it is elsewhere)");
  ASSERT_EQ(f.evidence.size(), 3u);
  EXPECT_EQ(f.evidence[2].rank, 2);
  ASSERT_EQ(f.details.size(), 2u);
  EXPECT_EQ(f.details[0], "rank 3: live state checkpoint, waiting for nobody");
  EXPECT_EQ(f.details[1], "the longest wait: waited 31.0 s (stall threshold 30.0 s)");
  EXPECT_EQ(fs[1].roles[0].ranks, Ranks{4});
  EXPECT_EQ(fs[1].op, "barrier");
}

TEST(SnapshotRootCheck, APointInTimeChainIsWaitingNotDeadlocked) {
  // Rank 0 waits on 1, 1 waits on 2, 2 is computing: no hang from one
  // snapshot, an info finding naming rank 2, where the chain ends.
  JobBuilder b;
  b.Wait(0, "all_reduce", {1}, 7).Wait(1, "all_reduce", {2}, 7).Wait(2, "forward", {}, 6);
  model::Job job = b.Build();
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_EQ(fs[0].summary,
            "waiting, not deadlocked: rank 1 waits in all_reduce for rank 2, which is not waiting on anyone (it is "
            "elsewhere); one snapshot does not show it stuck (no waited_ms)");
  // A short wait is still no hang; a long one, against its own threshold, is.
  Waited(&job, 1, 4000, 5000);
  fs = RunCheck(&SnapshotRootCheck, job);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_NE(fs[0].summary.find("waited 4.0 s (stall threshold 5.0 s): it may only be slow"), std::string::npos);
  Waited(&job, 1, 5000, 5000);
  fs = RunCheck(&SnapshotRootCheck, job);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_TRUE(fs[0].hang);
  // assume_timed_out: every wait is a hang.
  AnalyzeOptions assume;
  assume.assume_timed_out = true;
  EXPECT_EQ(RunCheck(&SnapshotRootCheck, b.Build(), assume)[0].kind, Kind::kMissingRank);
}

TEST(SnapshotRootCheck, CulpritsLeastProgressedFirst) {
  JobBuilder b;
  b.Wait(0, "all_reduce", {2, 3}, 9).Wait(2, "forward", {}, 8).Wait(3, "data_loader", {}, 5);
  model::Job job = b.Build();
  Waited(&job, 0, 60000);
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{3, 2}));
}

TEST(SnapshotRootCheck, ARankWithNoStateIsDeadNextToFlightRecorderDumps) {
  // Rank 0 waits for rank 1, of which nothing was given; rank 2 has a
  // Flight Recorder dump, so a rank with no data at all most likely died.
  JobBuilder b;
  b.Wait(0, "all_reduce", {1}).Steps(2, "0", 1, 1);
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].summary, "rank 0 waits in all_reduce for rank 1, of which there is no state at all");
  // From wait states alone, silence is absence, not death.
  JobBuilder s;
  s.Wait(0, "all_reduce", {1});
  EXPECT_EQ(RunCheck(&SnapshotRootCheck, s.Build())[0].kind, Kind::kMissingRank);
}

TEST(SnapshotRootCheck, ADeadlockedWaitIsTheCycleChecks) {
  JobBuilder b;
  b.Wait(0, "send", {1}).Wait(1, "send", {0}).Wait(2, "recv", {0});
  EXPECT_TRUE(RunCheck(&SnapshotRootCheck, b.Build()).empty());
}

TEST(SnapshotRootCheck, WaitersOfCulpritsInOneStateShareOneFinding) {
  // Ranks 0 and 1 wait in all_reduce for different ranks (3, 4) that are
  // both in forward: one finding. Rank 2 waits for rank 5, which
  // checkpoints: another. Rank 6 waits in a barrier: a third.
  JobBuilder b;
  b.Wait(0, "all_reduce", {3}, 7).Wait(1, "all_reduce", {4}, 7).Wait(2, "all_reduce", {5}, 7);
  b.Wait(3, "forward", {}, 6).Wait(4, "forward", {}, 6).Wait(5, "checkpoint", {}, 6).Wait(6, "barrier", {3}, 7);
  model::Job job = b.Build();
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, job);
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].roles[0].ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{3, 4}));
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_EQ(fs[0].details.size(), 2u);
  EXPECT_EQ(fs[1].roles[0].ranks, Ranks{2});
  EXPECT_EQ(fs[1].culprit_ranks, Ranks{5});
  EXPECT_EQ(fs[2].roles[0].ranks, Ranks{6});
  EXPECT_EQ(fs[2].op, "barrier");
}

TEST(SnapshotRootCheck, ManyWaitersListTheirFirstEvidenceThenACount) {
  // 40 ranks wait each for its own idle rank: one finding; its roles hold
  // them all, its evidence and details the first 16 and a count.
  JobBuilder b;
  for (model::Rank r = 0; r < 40; ++r) b.Wait(r, "all_reduce", {40 + r}, 7).Wait(40 + r, "forward", {}, 6);
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].roles[0].ranks.size(), 40u);
  EXPECT_EQ(fs[0].culprit_ranks.size(), 40u);
  ASSERT_EQ(fs[0].evidence.size(), 17u);
  EXPECT_EQ(fs[0].evidence[16].rank, -1);
  EXPECT_EQ(fs[0].evidence[16].note, "... and 24 more ranks wait in all_reduce (the role 'waiting' lists them)");
  ASSERT_EQ(fs[0].details.size(), 17u);
  EXPECT_EQ(fs[0].details[16].rfind("... and 24 more culprits", 0), 0u) << fs[0].details[16];
}

}  // namespace
}  // namespace hangdx::analyze
