#include "hangdx/analyze/checks/collective_mismatch.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(CollectiveMismatchCheck, DifferentOpsAreACollectiveMismatchNamingTheMinority) {
  // Ranks 0, 1 and 3 call all_reduce at seq 2, rank 2 broadcast.
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 1).Coll(r, "0", 2, r == 2 ? "broadcast" : "all_reduce");
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.op, "all_reduce");
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 2);
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 3}));
  // The deviating side's record first.
  EXPECT_EQ(f.evidence.front().rank, 2);
  EXPECT_TRUE(f.hang);
}

TEST(CollectiveMismatchCheck, ATieWithMembersUnseenIsUndecidedNamingBothSides) {
  // Two logs of a 4-rank communicator that disagree (ROCm/rccl#429): ranks
  // 1 and 3 would decide which side deviated.
  JobBuilder b("nccl");
  b.Coll(0, "0", 7, "all_reduce", false).Coll(2, "0", 7, "all_gather", false);
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Members("0", {0, 1, 2, 3}).Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_EQ(f.candidates, (Ranks{0, 2}));
  EXPECT_EQ(f.culprit_ranks, (Ranks{0, 2}));
  EXPECT_NE(f.summary.find("ranks 1,3 of pg 0 (default_pg) are not in the files"), std::string::npos) << f.summary;
  EXPECT_EQ(f.would_decide.rfind("the dump or log of ranks 1,3", 0), 0u) << f.would_decide;
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.severity, Severity::kError);
}

TEST(CollectiveMismatchCheck, ATieWithEveryMemberSeenKeepsThePriorAndSaysSo) {
  // Both members of a 2-rank pg seen: no more evidence exists; the side
  // without the lowest rank is the reference (rank-0-only code paths).
  JobBuilder b("nccl");
  b.Coll(0, "0", 7, "broadcast", false, {1}).Coll(1, "0", 7, "all_reduce", false);
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Members("0", {0, 1}).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
  EXPECT_TRUE(fs[0].candidates.empty());
  EXPECT_NE(fs[0].details.front().find("the side without the lowest rank"), std::string::npos);
}

TEST(CollectiveMismatchCheck, SizeAndDtypeDifferencesAreSizeMismatches) {
  JobBuilder b;
  b.Coll(0, "0", 1, "all_reduce").Coll(1, "0", 1, "all_reduce").Coll(2, "0", 1, "all_reduce", true, {4, 4}, "Half");
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kSizeMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_NE(fs[0].summary.find("disagree on dtype"), std::string::npos) << fs[0].summary;
}

TEST(CollectiveMismatchCheck, AllToAllSizesMayDifferByRank) {
  // all_to_all sizes alone are never compared; a coalesced group led by an
  // all_to_all whose other op differs in size cannot be decided either.
  JobBuilder b;
  b.Coll(0, "0", 1, "all_to_all", true, {4}).Coll(1, "0", 1, "all_to_all", true, {8});
  EXPECT_TRUE(RunCheck(&CollectiveMismatchCheck, b.Build()).empty());
  b.Coll(0, "0", 1, "broadcast", true, {4}).Coll(1, "0", 1, "broadcast", true, {8});
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].summary,
            "all_to_all at pg 0 (default_pg) seq 1 has rank-dependent sizes, which all_to_all allows: "
            "cannot decide");
}

TEST(CollectiveMismatchCheck, EvidenceListsEightRanksASideAndCountsTheRest) {
  // 11 ranks call all_reduce [4,4], rank 11 [2]: its record, then 8 of the
  // 11, then "... and 3 more".
  JobBuilder b;
  for (int r = 0; r < 12; ++r) b.Coll(r, "0", 1, "all_reduce", true, r == 11 ? model::Shape{2} : model::Shape{4, 4});
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  ASSERT_EQ(fs[0].evidence.size(), 10u);
  EXPECT_EQ(fs[0].evidence[0].rank, 11);
  EXPECT_EQ(fs[0].evidence[9].note, "... and 3 more ranks with the same record");
}

TEST(CollectiveMismatchCheck, AMismatchPyTorchRaisedFailedFastInsteadOfHanging) {
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Coll(r, "0", 3, r == 1 ? "broadcast" : "all_reduce", false);
  b.Event(0, model::LogEvent::Kind::kMismatch, "Detected mismatch between collectives on ranks.");
  model::Job job = b.Build();
  job.dumps[0].events[0].pg = "0";
  job.dumps[0].events[0].seq = 3;
  std::vector<Finding> fs = RunCheck(&CollectiveMismatchCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].severity, Severity::kError);
  EXPECT_EQ(fs[0].roles.back().role, "raised the mismatch error");
  EXPECT_EQ(fs[0].roles.back().ranks, Ranks{0});
  EXPECT_EQ(fs[0].evidence.front().file, "rank0.log");
}

TEST(CollectiveMismatchCheck, ASeqWhereAllAgreeIsNotItsBusiness) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 3);
  b.Coll(0, "0", 4, "all_reduce");  // rank 1 and 2 missing: missing_rank's
  EXPECT_TRUE(RunCheck(&CollectiveMismatchCheck, b.Build()).empty());
}

}  // namespace
}  // namespace hangdx::analyze
