#include "hangdx/analyze/checks/stall.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// NCCL, 4 members, all in seq 7 of pg 0; `retired`: the ops timed out.
model::Job AllInSeven(bool retired) {
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 6).Coll(r, "0", 7, "all_reduce", false, {4, 4}, "Float", retired);
  return b.Members("0", {0, 1, 2, 3}).Build();
}

TEST(StallCheck, EveryMemberInItAndTimedOutIsAnUndecidedError) {
  std::vector<Finding> fs = RunCheck(&StallCheck, AllInSeven(true));
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.seq, 7);
  EXPECT_TRUE(f.culprit_ranks.empty());
  EXPECT_EQ(f.summary,
            "all 4 recorded members of pg 0 (default_pg) are in all_reduce seq 7 and agree on it, but it has not "
            "finished");
  ASSERT_EQ(f.details.size(), 1u);
  EXPECT_EQ(f.details[0],
            "no rank is missing or disagrees: look at the transport (NCCL_DEBUG=INFO logs, network, a stuck device)");
  EXPECT_EQ(f.evidence.size(), 4u);
}

TEST(StallCheck, MembersInferredFromTheRanksSeenMayNotBeAll) {
  // The tester's three timeout lines of all_reduce seq 7, no member list and
  // no world size: "no rank is missing" was not known; a fourth rank that
  // never arrived would look the same.
  JobBuilder b("nccl");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 6).Coll(r, "0", 7, "all_reduce", false, {4, 4}, "Float", true);
  std::vector<Finding> fs = RunCheck(&StallCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  ASSERT_EQ(fs[0].details.size(), 1u);
  EXPECT_EQ(fs[0].details[0],
            "no record names the members of pg 0 (default_pg) or the world size: if the job has more ranks than ranks "
            "0-2, one that never arrived would hang it (pass --world-size); if not, look at the transport "
            "(NCCL_DEBUG=INFO logs, network, a stuck device)");
  EXPECT_FALSE(fs[0].would_decide.empty());
  // Given the world size, the members are known and the transport is left.
  std::vector<Finding> given = RunCheck(&StallCheck, b.World(3).Build());
  ASSERT_EQ(given.size(), 1u);
  EXPECT_EQ(given[0].details[0].rfind("no rank is missing or disagrees", 0), 0u) << given[0].details[0];
}

TEST(StallCheck, MembersThatLeftNoRecordAreCountedWhenOnlyTheSizeIsKnown) {
  // Tester F11: one rank's NCCL log, [nranks=4] and no Init line: the pg's
  // size is known, its members are not. Before: "all 1 recorded members ...
  // agree on it" and "no rank is missing". In a world of 8 (as large as
  // the world, the pg would have every rank as a member: MissingRankCheck).
  JobBuilder b("nccl");
  b.Coll(0, "c", 0, "broadcast", false, {4}, "Float", true).World(8);
  model::Job job = b.Build();
  model::PgConfig& c = job.dumps[0].pg_config["c"];
  c.name = "c";
  c.size = 4;  // ranks_known stays false
  std::vector<Finding> fs = RunCheck(&StallCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].summary,
            "only 1 of the 4 members of pg c left a record (rank 0): it is in broadcast seq 0, but it has not "
            "finished");
  ASSERT_FALSE(fs[0].details.empty());
  EXPECT_EQ(fs[0].details[0].rfind("the other 3 members left no record", 0), 0u) << fs[0].details[0];
}

TEST(StallCheck, OneRankOfAPgWhoseMembersNothingNamesIsNotTheWholePg) {
  // Tester: a single watchdog timeout of one rank said "all 1 recorded
  // members ... agree on it" and "no rank is missing: look at the transport";
  // a collective of one rank cannot wait, so others exist, unknown.
  JobBuilder b("nccl");
  b.Coll(0, "c", 11, "all_reduce", false, {4}, "Float", true).FromLog(0);
  std::vector<Finding> fs = RunCheck(&StallCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].summary, "only rank 0 left a record of pg c: it is in all_reduce seq 11, but it has not finished");
  ASSERT_FALSE(fs[0].details.empty());
  EXPECT_EQ(fs[0].details[0].rfind("a collective of one rank cannot wait", 0), 0u) << fs[0].details[0];
  EXPECT_EQ(fs[0].fix_hint, "collect every member's log from its start (NCCL_DEBUG=INFO) and rerun");
}

TEST(StallCheck, AnEmptyPgNameIsWrittenAsTwoQuotes) {
  // Tester REPORT.md 19.9: "all 1 recorded members of pg  are in all_reduce seq 0".
  JobBuilder b("nccl");
  for (int r = 0; r < 2; ++r) b.Coll(r, "", 1, "all_reduce", false, {4}, "Float", true);
  std::vector<Finding> fs = RunCheck(&StallCheck, b.Members("", {0, 1}).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].summary.rfind("all 2 recorded members of pg '' ", 0), 0u) << fs[0].summary;
}

TEST(StallCheck, TheRankThatHasNotStartedItIsTheOneToLookAt) {
  model::Job job = AllInSeven(true);
  for (auto& d : job.dumps)
    if (d.rank != 2) d.ops.back().state = model::OpState::kStarted;
  std::vector<Finding> fs = RunCheck(&StallCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_EQ(fs[0].roles[1].role, "least advanced");
  EXPECT_EQ(fs[0].details[0], "rank 2 has not started it while others have");
}

TEST(StallCheck, WithoutATimeoutItIsAWarning) {
  // gloo, members not recorded: a member it cannot see may be missing.
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Coll(r, "0", 1, "all_reduce", false);
  std::vector<Finding> fs = RunCheck(&StallCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_FALSE(fs[0].hang);
  ASSERT_EQ(fs[0].details.size(), 2u);
  EXPECT_EQ(fs[0].details[0], "gloo records no pg members: a member that never recorded this pg may be missing");
  EXPECT_EQ(fs[0].details[1], "no evidence that the wait timed out: it may still be running");
}

TEST(StallCheck, NcclLogLinesAloneDoNotShowAStall) {
  // COLL lines are printed at enqueue: no timeout, no finding.
  model::Job job = AllInSeven(false);
  for (auto& d : job.dumps)
    for (auto& op : d.ops) op.pg_desc = d.interner->Str("NCCL communicator of 4 ranks");
  EXPECT_TRUE(RunCheck(&StallCheck, job).empty());
  model::LogEvent timeout;
  timeout.kind = model::LogEvent::Kind::kTimeout;
  timeout.message = "Watchdog timeout";
  job.dumps[1].events.push_back(timeout);
  std::vector<Finding> fs = RunCheck(&StallCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
}

// gloo, world of 3 (pg 0's members recorded, as a gloo dump of the default
// pg does): three finished all_reduces, then barrier seq 4 retired on
// rank 2 and still pending on ranks 0,1, whose dumps were taken before it
// finished there (testdata/torch/j3).
model::Job BarrierEndedOnRankTwo() {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 3).Coll(r, "0", 4, "barrier", /*done=*/r == 2, {}, "");
  return b.Members("0", {0, 1, 2}).Build();
}

TEST(StallCheck, ACollectiveOneMemberEndedIsNoStall) {
  // Rank 2 ended seq 4, so every member reached it (a collective needs
  // all): ranks 0,1 were dumped a moment before it ended on them. The old
  // finding was "all 3 ... are in barrier seq 4 ... but it has not
  // finished. Look first at ranks 0-1".
  EXPECT_TRUE(RunCheck(&StallCheck, BarrierEndedOnRankTwo()).empty());
}

TEST(StallCheck, AnEndingTheRankLoggedAsAFailureIsStillAStall) {
  // gloo retires a failed op too: rank 2 logged a timeout, so its ending
  // is no sign that every member arrived, and the stall stands (least
  // advanced: ranks 0,1, whose op has not ended).
  model::Job job = BarrierEndedOnRankTwo();
  model::LogEvent timeout;
  timeout.kind = model::LogEvent::Kind::kTimeout;
  timeout.message = "Timed out waiting 4000ms for recv operation to complete";
  job.dumps[2].events.push_back(timeout);
  std::vector<Finding> fs = RunCheck(&StallCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].seq, 4);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
}

}  // namespace
}  // namespace hangdx::analyze
