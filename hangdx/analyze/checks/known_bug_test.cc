#include "hangdx/analyze/checks/known_bug.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using ::testing::HasSubstr;
using Ranks = std::vector<model::Rank>;

// The watchdog's abort stuck synchronizing the communicator's stream
// (NVIDIA/nccl#829), innermost first.
const std::vector<std::string> kAbortSync = {
    "??", "cudaStreamSynchronize", "ncclStrongStreamSynchronize", "commDestroySync", "commReclaim", "ncclCommAbort"};

model::LogEvent Setting(const std::string& name, const std::string& value) {
  model::LogEvent e;
  e.kind = model::LogEvent::Kind::kConfig;
  e.setting = name;
  e.value = value;
  return e;
}

TEST(KnownBugCheck, EveryRankStuckInTheBugsFramesIsThatBugWithNoCulprit) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Stack(r, kAbortSync);
  std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kResourceDeadlock);
  EXPECT_TRUE(f.culprit_ranks.empty());
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.known_bug.id, "nccl-829-abort-stream-synchronize");
  EXPECT_EQ(f.known_bug.url, "https://github.com/NVIDIA/nccl/issues/829");
  EXPECT_EQ(f.roles.at(0).ranks, (Ranks{0, 1, 2, 3}));
  EXPECT_THAT(f.fix_hint,
              HasSubstr("known NCCL bug nccl-829-abort-stream-synchronize (affects NCCL 2.14-, not fixed)"));
  EXPECT_THAT(f.fix_hint, HasSubstr("https://github.com/NVIDIA/nccl/issues/829"));
  EXPECT_EQ(f.op,
            "ncclCommAbort > commReclaim > commDestroySync > ncclStrongStreamSynchronize > cudaStreamSynchronize");
  EXPECT_THAT(f.details.at(1), HasSubstr("version is not in the files"));
  EXPECT_EQ(f.evidence.size(), 4u);
}

TEST(KnownBugCheck, OneRankStuckElsewhereMeansNoBugFinding) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Stack(r, kAbortSync);
  b.Stack(3, {"all_reduce", "train_step"});
  EXPECT_TRUE(testing::RunCheck(&KnownBugCheck, b.Build()).empty());
}

TEST(KnownBugCheck, ARankWithoutAStackIsNotCounted) {
  JobBuilder b;
  b.Stack(1, kAbortSync).Steps(0, "0", 1, 3);
  std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].roles.at(0).ranks, Ranks{1});
  EXPECT_THAT(fs[0].summary, HasSubstr("the only rank with a stack"));
}

TEST(KnownBugCheck, AVersionOutsideTheAffectedRangeRulesTheBugOut) {
  // commReclaim waiting in pthread_join: NVIDIA/nccl#863, from 2.16.2 on.
  const std::vector<std::string> join = {"__pthread_timedjoin_ex", "commReclaim(ncclComm*)", "ncclCommAbort"};
  for (const char* version : {"2.15.5", "2.18.1"}) {
    JobBuilder b;
    b.Stack(0, join);
    b.Rank(0).comm_lib_version = version;
    std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, b.Build());
    if (std::string(version) == "2.15.5") {
      EXPECT_TRUE(fs.empty()) << version;
    } else {
      ASSERT_EQ(fs.size(), 1u) << version;
      EXPECT_EQ(fs[0].known_bug.id, "nccl-863-abort-reclaim-join");
      EXPECT_THAT(fs[0].details.at(1), HasSubstr("NCCL 2.18.1 is in the affected range 2.16.2-"));
    }
  }
}

TEST(KnownBugCheck, GenericFramesNeedTheVersionKnownAndAffected) {
  // Horovod's background thread polling an event: every Horovod GPU wait
  // looks like this; only NCCL 2.8.3 makes it horovod#2601.
  const std::vector<std::string> poll = {"sched_yield", "__gthread_yield", "std::this_thread::yield",
                                         "horovod::common::GPUContext::impl::WaitForEvents"};
  JobBuilder unknown;
  unknown.Stack(1, poll);
  EXPECT_TRUE(testing::RunCheck(&KnownBugCheck, unknown.Build()).empty());
  JobBuilder affected;
  affected.Stack(1, poll).Steps(0, "0", 1, 2);
  affected.Rank(0).comm_lib_version = "2.8.3";  // another rank's record of the job's NCCL
  std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, affected.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].known_bug.id, "horovod-2601-nccl-2.8.3-alltoall");
  EXPECT_THAT(fs[0].fix_hint, HasSubstr("fixed in 2.8.4"));
}

TEST(KnownBugCheck, ASettingTheJobLoggedOtherwiseRulesTheBugOut) {
  const std::vector<std::string> launch = {"cudaLaunchKernel", "ncclStrongStreamLaunchKernel", "ncclLaunchKernel",
                                           "ncclGroupEndInternal", "ncclGroupEnd"};
  JobBuilder unset;
  unset.Stack(0, launch);
  std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, unset.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].known_bug.id, "nccl-750-cuda-launch-blocking-proxy");
  EXPECT_THAT(fs[0].details.back(), HasSubstr("needs CUDA_LAUNCH_BLOCKING=1, which the files do not show"));
  JobBuilder set;
  set.Stack(0, launch).Event(0, Setting("CUDA_LAUNCH_BLOCKING", "1"));
  fs = testing::RunCheck(&KnownBugCheck, set.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_THAT(fs[0].details.back(), HasSubstr("CUDA_LAUNCH_BLOCKING=1 is set"));
  JobBuilder other;
  other.Stack(0, launch).Event(0, Setting("CUDA_LAUNCH_BLOCKING", "0"));
  EXPECT_TRUE(testing::RunCheck(&KnownBugCheck, other.Build()).empty());
}

TEST(KnownBugCheck, TheMostSpecificSignatureWinsInTheAbortFamily) {
  // PyTorch's abort waiting on ncclCommAbort stuck in commFree's
  // pthread_join: NVIDIA/nccl#1777 (4 frames), also the 2-frame
  // pytorch#149153 signature at NCCL 2.25.
  JobBuilder b;
  b.Stack(0, {"pthread_join", "commFree", "ncclCommAbort", "c10d::ProcessGroupNCCL::abortCommsFromMap",
              "c10d::ProcessGroupNCCL::abort", "c10d::ProcessGroupNCCL::waitForFutureOrTimeout"});
  b.Rank(0).comm_lib_version = "2.25.1";
  std::vector<Finding> fs = testing::RunCheck(&KnownBugCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].known_bug.id, "nccl-1777-abort-commfree-proxy-poll");
}

TEST(KnownBugCheck, AMismatchInTheDumpsStillLeads) {
  // The abort that hangs is the watchdog's reaction to a timeout: what
  // caused the timeout comes first.
  JobBuilder b("nccl");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce", false).Coll(1, "0", 3, "all_reduce", false).Coll(2, "0", 3, "broadcast", false);
  for (int r = 0; r < 3; ++r) b.Stack(r, kAbortSync);
  Diagnosis d = Analyze(b.Members("0", {0, 1, 2}).Build());
  ASSERT_GE(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(d.findings[1].kind, Kind::kResourceDeadlock);
}

}  // namespace
}  // namespace hangdx::analyze
