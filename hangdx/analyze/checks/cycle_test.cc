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
  EXPECT_EQ(fs[0].culprit_ranks.size(), 2u);  // the witness cycle's ranks, one per side
  // Which side's order is the odd one is said to be undecided.
  ASSERT_EQ(fs[0].roles.size(), 1u);
  EXPECT_EQ(fs[0].roles[0].role, "issued the pgs in different orders (which order is the odd one is undecided)");
  EXPECT_EQ(fs[0].roles[0].ranks, fs[0].culprit_ranks);
}

TEST(CycleCheck, SubGroupsRecordedByOneRankEachAreAnOrderInversionOfTheirRanks) {
  // testdata/torch/h_sub as a job: gloo, world of 3; rank 0 in seq 1 of pg 1
  // and rank 1 in seq 1 of pg 2, each pg recorded by that rank alone; rank 2
  // in pg 0 seq 3 waiting for both, its dump listing the world under gloo's
  // pg_config '' (in no sub-group). pg 1's other member can only be rank 1,
  // pg 2's only rank 0: a cycle of ranks 0 and 1 across pgs 1 and 2. One
  // rank per order: which is the odd one is not known, both are named.
  JobBuilder b("gloo");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "2", 1, "all_reduce", false).Coll(2, "0", 3, "barrier", false);
  model::PgConfig& c = b.Rank(2).pg_config[""];
  c.ranks = model::SharedRanks(Ranks{0, 1, 2});
  c.ranks_known = true;
  model::Job job = b.World(3).Build();
  std::vector<Finding> fs = RunCheck(&CycleCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].cycle, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].summary,
            "circular wait across process groups issued in different orders: 0 -> 1 -> 0 (rank 0 in pg 1 seq 1 "
            "all_reduce waits for rank 1; rank 1 in pg 2 seq 1 all_reduce waits for rank 0)");
  ASSERT_EQ(fs[0].details.size(), 4u);
  EXPECT_EQ(fs[0].details[1],
            "as many ranks wait in each pg of the cycle: which of ranks 0-1 issued the pgs in the odd order cannot be "
            "told from these ranks; look at each");
  EXPECT_EQ(fs[0].details[2],
            "pg 1's members are not recorded and only rank 0 records it: a collective of one rank cannot wait, so it "
            "has members that left no record of it: rank 1, blocked elsewhere: it cannot finish; not rank "
            "2, whose dump lists the world in gloo's pg_config '' (a rank that created the backend of a new_group "
            "lists none there): in no sub-group");
  EXPECT_EQ(fs[0].details[3].substr(0, 52), "pg 2's members are not recorded and only rank 1 reco");
}

TEST(CycleCheck, SubGroupsRecordedByOneRankEachWhenAnyRankCanBeTheirMembers) {
  // The same without rank 2's world list: pg 1's other member can be rank 1
  // or rank 2, pg 2's rank 0 or rank 2, and all three nodes form one
  // component. The witness is the cycle of the two pgs that only one rank
  // each records (ranks 0-1), not one through rank 2's barrier, whose wait
  // for ranks 0-1 is explained; the details say the members are a reading.
  JobBuilder b("gloo");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "2", 1, "all_reduce", false).Coll(2, "0", 3, "barrier", false);
  std::vector<Finding> fs = RunCheck(&CycleCheck, b.World(3).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  ASSERT_EQ(fs[0].details.size(), 4u);
  EXPECT_EQ(fs[0].details[2],
            "pg 1's members are not recorded and only rank 0 records it: a collective of one rank cannot wait, so it "
            "has members that left no record of it: among ranks 1-2, each blocked elsewhere: it cannot finish; which "
            "of them is not known: the cycle shown is one that they allow");
}

TEST(CycleCheck, ThreeSubGroupsRecordedByOneRankEachNameNoCycle) {
  // testdata/torch/tri_cycle as a job: gloo, world of 3, gA=[0,1] (pg 1),
  // gB=[1,2] (pg 2), gC=[0,2] (pg 3); rank 0 waits in pg 1, rank 1 in pg 2,
  // rank 2 in pg 3, each pg recorded by its waiter alone. pg 1's other
  // member is rank 1 or 2, pg 2's rank 0 or 2, pg 3's rank 0 or 1: by hand,
  // 0 -> 1 -> 0 (pg 2 = {1, 0}) and 0 -> 1 -> 2 -> 0 (the program's) are
  // both allowed, and in every reading each rank waits only for the other
  // two, all blocked: all three are in the deadlock and no cycle is named.
  JobBuilder b("gloo");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 1);
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "2", 1, "all_reduce", false).Coll(2, "3", 1, "all_reduce", false);
  std::vector<Finding> fs = RunCheck(&CycleCheck, b.World(3).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1, 2}));
  EXPECT_TRUE(fs[0].cycle.empty());
  EXPECT_EQ(fs[0].summary,
            "circular wait across process groups issued in different orders among ranks 0-2: rank 0 in pg 1 seq 1 "
            "all_reduce, rank 1 in pg 2 seq 1 all_reduce and rank 2 in pg 3 seq 1 all_reduce, each waiting for "
            "members of its pg that no record shows, and every rank that can be one is blocked in another of them; "
            "which cycle they form is not known");
  ASSERT_EQ(fs[0].details.size(), 4u);
  EXPECT_EQ(fs[0].details[0].substr(0, 60), "the cycles those members allow include 0 -> 1 -> 0 (rank 0 i");
  EXPECT_EQ(fs[0].details[3],
            "pg 3's members are not recorded and only rank 2 records it: a collective of one rank cannot wait, so it "
            "has members that left no record of it: among ranks 0-1, each blocked elsewhere: it cannot finish; which "
            "of them is not known");
  EXPECT_EQ(fs[0].evidence.size(), 3u);
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
