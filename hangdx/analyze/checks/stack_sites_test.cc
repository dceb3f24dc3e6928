#include "hangdx/analyze/checks/stack_sites.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(StackSitesCheck, TwoCallSitesNameTheSmallerSide) {
  // sglang#27489: rank 0 in all_reduce under writing_check, ranks 1-3 in the
  // next iteration's broadcast.
  JobBuilder b;
  b.Stack(0, {"all_reduce", "writing_check", "check_hicache_events", "event_loop_overlap"});
  for (int r = 1; r < 4; ++r) b.Stack(r, {"broadcast", "broadcast_pyobj", "recv_requests", "event_loop_overlap"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(f.culprit_ranks, Ranks{0});
  EXPECT_EQ(f.op, "broadcast");
  EXPECT_EQ(f.summary,
            "the ranks' stacks are in different collectives: ranks 1-3 in broadcast in broadcast_pyobj; rank 0 in "
            "all_reduce in writing_check");
  ASSERT_EQ(f.evidence.size(), 4u);
  EXPECT_EQ(f.evidence[0].note, "stack (line 1): all_reduce <- writing_check <- check_hicache_events");
}

TEST(StackSitesCheck, ARankInNoCollectiveIsTheMissingRank) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Stack(r, {"wait", "all_reduce", "train_step"});
  b.Stack(3, {"save", "save_checkpoint", "train_step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].summary, "ranks 0-2 are blocked in all_reduce in train_step while rank 3 is in no collective");
}

TEST(StackSitesCheck, ARankInNoCollectiveWhoseLogSaysItCrashedIsTheCrashedRank) {
  // The fresh-user tester's torchrun log: rank 1's traceback ends in an
  // OOM, ranks 0 and 2 are in all_reduce ("Connection closed by peer").
  // Was missing_rank ("rank 1 is in no collective": py-spy a dead process).
  JobBuilder b;
  for (int r : {0, 2}) b.Stack(r, {"all_reduce", "wrapper", "<module>"});
  b.Stack(1, {"<module>"});
  b.Event(1, model::LogEvent::Kind::kCrash, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, (std::vector<model::Rank>{1}));
  EXPECT_NE(fs[0].summary.find("OutOfMemoryError"), std::string::npos) << fs[0].summary;
}

TEST(StackSitesCheck, OneCallSiteOrRanksWithOpsSayNothing) {
  JobBuilder same;
  for (int r = 0; r < 3; ++r) same.Stack(r, {"all_reduce", "train_step"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, same.Build()).empty());
  // Rank 1 has recorded ops: its entries speak for it, leaving one stack.
  JobBuilder ops;
  ops.Stack(0, {"all_reduce", "a"}).Steps(1, "0", 1, 1).Stack(1, {"broadcast", "b"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, ops.Build()).empty());
}

TEST(StackSitesCheck, EveryRankInTheSameCallOutsideCollectivesIsAHangInsideIt) {
  // sglang#33642: every scheduler in cuModuleLoadData (py-spy, thread active).
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Stack(r, {"cuModuleLoadData", "loadBinary", "_init_handles", "run"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kResourceDeadlock);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].op, "cuModuleLoadData");
  EXPECT_EQ(fs[0].roles.at(0).ranks, (Ranks{0, 1, 2, 3}));
  // Different calls, or threads py-spy saw idle (waiting on something): nothing said.
  JobBuilder apart;
  apart.Stack(0, {"cuModuleLoadData", "run"}).Stack(1, {"forward", "run"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, apart.Build()).empty());
  model::Job idle = JobBuilder().Stack(0, {"poll", "dequeue"}).Stack(1, {"poll", "dequeue"}).Build();
  for (auto& d : idle.dumps) d.stacks[0].thread = "Thread 7 (idle): \"MainThread\"";
  EXPECT_TRUE(RunCheck(&StackSitesCheck, idle).empty());
}

TEST(StackSitesCheck, StacksOfRanksThatAllCrashedAreNoHangInsideTheCall) {
  // testdata/torch/all_segv: faulthandler prints the stack the SIGSEGV hit
  // (string_at) on every rank: they died in that call, they do not wait in
  // it (the crash is passes/unnamed_crash's finding). One rank alive keeps it.
  JobBuilder b;
  for (int r = 0; r < 3; ++r)
    b.Stack(r, {"string_at", "<module>"}).Event(r, model::LogEvent::Kind::kCrash, "Fatal Python error: Segmentation fault");
  EXPECT_TRUE(RunCheck(&StackSitesCheck, b.Build()).empty());
  b.Stack(3, {"string_at", "<module>"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kResourceDeadlock);
}

TEST(StackSitesCheck, EqualSidesWithRanksWithoutAStackAreUndecided) {
  JobBuilder b;
  b.Stack(0, {"all_reduce", "step"}).Stack(1, {"broadcast", "load"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].candidates, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].would_decide.rfind("the stacks of ranks 2-3", 0), 0u) << fs[0].would_decide;
}

}  // namespace
}  // namespace hangdx::analyze
