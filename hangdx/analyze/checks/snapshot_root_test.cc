#include "hangdx/analyze/checks/snapshot_root.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(SnapshotRootCheck, WaitersOfAnIdleRankShareOneFindingPerOp) {
  // Ranks 0-2 wait in all_reduce seq 41 for rank 3, which checkpoints; rank
  // 4 waits for rank 3 in a barrier: a second finding.
  JobBuilder b;
  b.Wait(0, "all_reduce", {3}, 41).Wait(1, "all_reduce", {3}, 41).Wait(2, "all_reduce", {3}, 41);
  b.Wait(3, "checkpoint", {}, 40).Wait(4, "barrier", {3});
  std::vector<Finding> fs = RunCheck(&SnapshotRootCheck, b.Build());
  ASSERT_EQ(fs.size(), 2u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.seq, 41);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2}));
  EXPECT_EQ(f.roles[1].role, "not waiting");
  EXPECT_EQ(f.summary, "ranks 0-2 wait in all_reduce for rank 3, which is not waiting on anyone (it is elsewhere)");
  ASSERT_EQ(f.evidence.size(), 3u);
  EXPECT_EQ(f.evidence[2].rank, 2);
  ASSERT_EQ(f.details.size(), 1u);
  EXPECT_EQ(f.details[0], "rank 3: live state checkpoint, waiting for nobody");
  EXPECT_EQ(fs[1].roles[0].ranks, Ranks{4});
  EXPECT_EQ(fs[1].op, "barrier");
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

}  // namespace
}  // namespace hangdx::analyze
