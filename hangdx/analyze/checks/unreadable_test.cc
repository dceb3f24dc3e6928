#include "hangdx/analyze/checks/unreadable.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// Ranks 0 and 1 wait in seq 3 of pg 0 (members 0-2, or 0-3 with `idle3`:
// rank 3 then finished seq 2 and went elsewhere); rank 2's dump was found
// but could not be read.
model::Job RankTwoUnreadable(bool idle3) {
  JobBuilder b("nccl");
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 2).Coll(r, "0", 3, "all_reduce", false);
  if (idle3) b.Steps(3, "0", 1, 2);
  model::Job job = b.Members("0", idle3 ? Ranks{0, 1, 2, 3} : Ranks{0, 1, 2}).Build();
  job.unreadable[2] = "trace_2: truncated pickle";
  return job;
}

TEST(UnreadableCheck, SaysTheDumpCouldNotBeReadRatherThanCallTheRankDead) {
  std::vector<Finding> fs = RunCheck(&UnreadableCheck, RankTwoUnreadable(false));
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.summary,
            "ranks 0-1 wait in all_reduce (pg 0 (default_pg) seq 3) for rank 2, whose dump could not be read "
            "(trace_2: truncated pickle): cannot tell what it was doing");
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].file, "trace_2: truncated pickle");
}

TEST(AbsentRanks, EachRootInstanceGoesToOneCheck) {
  // With rank 3 idle too, the instance is the missing-rank check's.
  model::Job job = RankTwoUnreadable(true);
  EXPECT_TRUE(RunCheck(&UnreadableCheck, job).empty());
  RankAnalysis a = BuildRankAnalysis(job, {});
  AbsentRanks absent = ClassifyAbsent(a, a.instances.list[a.instances.Find(0, 3)]);
  EXPECT_EQ(absent.idle, Ranks{3});
  EXPECT_EQ(absent.dead, Ranks{2});
  EXPECT_EQ(absent.unreadable, Ranks{2});
  EXPECT_EQ(absent.cause, AbsentRanks::Cause::kAbsent);
  model::Job alone = RankTwoUnreadable(false);
  RankAnalysis b = BuildRankAnalysis(alone, {});
  EXPECT_EQ(ClassifyAbsent(b, b.instances.list[b.instances.Find(0, 3)]).cause, AbsentRanks::Cause::kUnreadable);
}

}  // namespace
}  // namespace hangdx::analyze
