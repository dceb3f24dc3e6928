#include "hangdx/analyze/checks/cycle.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(CycleCheck, SendSendBetweenTwoRanksIsAP2pCycle) {
  JobBuilder b("nccl");
  b.P2P(0, "0", "send 0->1").P2P(0, "0", "recv 0<-1");
  b.P2P(1, "0", "send 1->0").P2P(1, "0", "recv 1<-0");
  model::Job job = b.Members("0", {0, 1}).Build();
  std::vector<Finding> fs = RunCheck(&CycleCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pCycle);
  EXPECT_EQ(fs[0].cycle, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].severity, Severity::kError);
  // One blocked-in record per P2P op on the witness cycle (both sends).
  ASSERT_EQ(fs[0].evidence.size(), 2u);
  EXPECT_EQ(fs[0].evidence[0].note, "blocked in pg 0 (default_pg) nccl:send 0->1");
}

TEST(CycleCheck, WaitsInThreeRanksOfMixedOpsAreAWaitCycleInWaitOrder) {
  // 2 waits for 0, 0 for 1, 1 for 2: the cycle reads from the smallest rank.
  JobBuilder b;
  b.Wait(0, "all_reduce", {1}).Wait(1, "event_wait", {2}).Wait(2, "recv", {0});
  std::vector<Finding> fs = RunCheck(&CycleCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kWaitCycle);
  EXPECT_EQ(fs[0].cycle, (Ranks{0, 1, 2}));
  EXPECT_EQ(fs[0].summary,
            "circular wait: 0 -> 1 -> 2 -> 0 (rank 0 in all_reduce waits for rank 1; rank 1 in event_wait waits for "
            "rank 2; rank 2 in recv waits for rank 0)");
  EXPECT_EQ(fs[0].op, "all_reduce / event_wait / recv");
}

TEST(CycleCheck, SnapshotsAllInSendOrRecvAreAP2pCycle) {
  JobBuilder b;
  b.Wait(0, "send", {1}).Wait(1, "recv", {0});
  std::vector<Finding> fs = RunCheck(&CycleCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pCycle);
}

TEST(CycleCheck, CollectivesOfTwoPgsInOppositeOrderAreAnOrderInversion) {
  // gloo, members inferred: rank 0 is in pg 1 seq 3, rank 1 in pg 2 seq 3;
  // each waits for the other. The finding is about no single pg.
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Steps(r, "1", 1, 2).Steps(r, "2", 1, 2);
  b.Coll(0, "1", 3, "all_reduce").Coll(1, "2", 3, "all_reduce");
  std::vector<Finding> fs = RunCheck(&CycleCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(fs[0].pg_name, "");
  EXPECT_EQ(fs[0].seq, -1);
  EXPECT_EQ(fs[0].cycle, (Ranks{0, 1}));
}

TEST(CycleCheck, AcrossPgsTheCulpritsAreTheMinoritySide) {
  // Ranks 0-3 are members of pgs 1 and 2. Ranks 0-2 issued pg 1's seq 3
  // first and wait in it for rank 3; rank 3 issued pg 2's seq 3 first and
  // waits in it for ranks 0-2. Rank 3's order is the odd one: it alone is
  // the culprit, not one rank from each side of the witness cycle.
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "1", 1, 2).Steps(r, "2", 1, 2);
  for (int r = 0; r < 3; ++r) b.Coll(r, "1", 3, "all_reduce", false);
  b.Coll(3, "2", 3, "all_gather", false);
  model::Job job = b.Members("1", {0, 1, 2, 3}).Members("2", {0, 1, 2, 3}).Build();
  std::vector<Finding> fs = RunCheck(&CycleCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  ASSERT_FALSE(fs[0].roles.empty());
  EXPECT_EQ(fs[0].roles[0].role, "issued the pgs in the minority order");
  EXPECT_EQ(fs[0].roles[0].ranks, Ranks{3});
}

TEST(CycleCheck, AcrossPgsATieKeepsBothSides) {
  // Ranks 0-1 wait in pg 1, ranks 2-3 in pg 2: no minority.
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "1", 1, 2).Steps(r, "2", 1, 2);
  for (int r = 0; r < 2; ++r) b.Coll(r, "1", 3, "all_reduce", false);
  for (int r = 2; r < 4; ++r) b.Coll(r, "2", 3, "all_gather", false);
  model::Job job = b.Members("1", {0, 1, 2, 3}).Members("2", {0, 1, 2, 3}).Build();
  std::vector<Finding> fs = RunCheck(&CycleCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_TRUE(fs[0].roles.empty());
  EXPECT_EQ(fs[0].culprit_ranks.size(), 2u);  // the witness cycle's ranks, one per side
}

TEST(CycleCheck, OnlyRanksInBothPgsCountForTheMinority) {
  // The tester's finding 0: tp pgs 1 = {0,1} and 2 = {2,3} under the default
  // pg 0. Rank 3 skipped pg 2's seq 2 and waits in pg 0 seq 3 with ranks
  // 0-1; rank 2 waits in pg 2 seq 2 for rank 3. Ranks 0-1 are in no pg 2:
  // counted, they made rank 2 (which kept the program's order) "the
  // minority". Between the two ranks of both pgs it is 1 against 1.
  JobBuilder b("nccl");
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 2);
  for (int r = 0; r < 2; ++r) b.Steps(r, "1", 1, 2).Coll(r, "0", 3, "all_reduce", false);
  b.Steps(2, "2", 1, 1).Coll(2, "2", 2, "all_reduce", false);
  b.Steps(3, "2", 1, 1).Coll(3, "0", 3, "all_reduce", false);
  model::Job job = b.Members("0", {0, 1, 2, 3}).Members("1", {0, 1}).Members("2", {2, 3}).Build();
  std::vector<Finding> fs = RunCheck(&CycleCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_TRUE(fs[0].roles.empty() || fs[0].roles[0].role != "issued the pgs in the minority order");
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{2, 3}));
}

TEST(CycleCheck, NoCycleNoFinding) {
  JobBuilder b;
  b.Wait(0, "all_reduce", {1}).Wait(1, "checkpoint", {});
  EXPECT_TRUE(RunCheck(&CycleCheck, b.Build()).empty());
}

}  // namespace
}  // namespace hangdx::analyze
