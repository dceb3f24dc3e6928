#include "hangdx/analyze/rank_graph.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/rank_analysis.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

TEST(RankGraph, AnInstanceWaitsWhereTheAbsentMemberIsBlocked) {
  // Rank 0 waits in pg A seq 3 for rank 1; rank 1 waits in pg B seq 2 for
  // rank 2, which is idle. Edges: A3 -> B2 (via 1), B2 -> sink of 2 (via 2).
  JobBuilder b("nccl");
  b.Steps(0, "A", 1, 2).Steps(1, "A", 1, 2).Steps(1, "B", 1, 1).Steps(2, "B", 1, 1);
  b.Coll(0, "A", 3, "all_reduce", false).Coll(1, "B", 2, "all_reduce", false);
  model::Job job = b.Members("A", {0, 1}).Members("B", {1, 2}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  const RankGraph& g = a.graph;
  int a3 = g.InstanceNode(a.instances.Find(a.groups.GroupOf(job.dumps[0], "A"), 3));
  int b2 = g.InstanceNode(a.instances.Find(a.groups.GroupOf(job.dumps[1], "B"), 2));
  ASSERT_GE(a3, 0);
  ASSERT_GE(b2, 0);
  EXPECT_EQ(g.Blocking(0), a3);
  EXPECT_EQ(g.Blocking(1), b2);
  int sink2 = g.Blocking(2);
  EXPECT_EQ(g.node(sink2).type, RankNodeType::kIdle);
  EXPECT_EQ(g.graph().successors(a3), std::vector<int>{b2});
  EXPECT_EQ(g.graph().successors(b2), std::vector<int>{sink2});
  EXPECT_EQ(g.Via(a3, b2), 1);
  EXPECT_EQ(g.Via(b2, sink2), 2);
  EXPECT_EQ(g.Via(b2, a3), -1);  // no such edge
  EXPECT_FALSE(g.dead(a3));      // the chain ends at an idle rank: it can still finish
  EXPECT_TRUE(g.components().empty());
  EXPECT_EQ(g.Blocking(9), -1);  // no dump, named by no edge
  EXPECT_EQ(a.Waiters(a3), Ranks{0});
  EXPECT_EQ(a.NodeLabel(a3), "pg A seq 3 all_reduce");
}

TEST(RankGraph, ASeqQueuedBehindAnUnfinishedProblemWaitsForIt) {
  // pg 0: seq 5 misses rank 2 and is pending; seq 6 (ranks 0, 1) is queued
  // behind it on the same stream: edge 6 -> 5 through no rank.
  JobBuilder b("nccl");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 2; ++r) b.Coll(r, "0", 5, "all_reduce", false).Coll(r, "0", 6, "all_reduce", false);
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  int five = a.instances.Find(0, 5), six = a.instances.Find(0, 6);
  EXPECT_EQ(a.graph.Behind(six), five);
  EXPECT_EQ(a.graph.Behind(five), -1);
  EXPECT_EQ(a.graph.Via(a.graph.InstanceNode(six), a.graph.InstanceNode(five)), -1);
  EXPECT_TRUE(a.IsRoot(five));
  EXPECT_FALSE(a.IsRoot(six));
}

TEST(RankGraph, SendSendIsACycleAndWaitSnapshotsAreNodes) {
  // Each rank sends first to the other: both sends wait for the peer's recv,
  // which is behind the peer's send. One cyclic component, all dead.
  JobBuilder b("nccl");
  b.P2P(0, "0", "send 0->1").P2P(0, "0", "recv 0<-1");
  b.P2P(1, "0", "send 1->0").P2P(1, "0", "recv 1<-0");
  model::Job job = b.Members("0", {0, 1}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  ASSERT_EQ(a.graph.components().size(), 1u);
  for (int v : a.graph.components()[0]) EXPECT_TRUE(a.graph.dead(v));
  // Snapshots: rank 0 waits for any of 1 and 2 (an OR node).
  JobBuilder s;
  s.Wait(0, "recv", {1, 2}).Wait(1, "checkpoint", {});
  model::Job snap = s.Build();
  snap.dumps[0].wait->any_of = true;
  RankAnalysis sa = BuildRankAnalysis(snap, {});
  ASSERT_EQ(sa.graph.snapshots().size(), 1u);  // rank 1 waits for nobody: no node
  ASSERT_EQ(sa.graph.snapshots()[0].first, 0);
  int n = sa.graph.snapshots()[0].second;
  EXPECT_EQ(sa.graph.graph().kind(n), WaitGraph::NodeKind::kOr);
  ASSERT_EQ(sa.graph.graph().successors(n).size(), 2u);
  EXPECT_EQ(sa.graph.node(sa.graph.graph().successors(n)[1]).type, RankNodeType::kNoDump);  // rank 2
  EXPECT_FALSE(sa.graph.dead(n));
}


// testdata/torch/h_sub as a job (gloo, world of 3, pg 0's members from the
// default pg): ranks 0-2 did pg 0 seqs 1-2; rank 0 is in seq 1 of pg 1 and
// rank 1 in seq 1 of pg 2 (each pg recorded by that rank alone, pending),
// rank 2 in pg 0 seq 3 (a barrier) for ranks 0-1. With `rank2_in_no_subgroup`
// rank 2's dump lists the world under gloo's pg_config '', as a rank that
// created no new_group backend does.
model::Job HSubJob(bool rank2_in_no_subgroup, int64_t world = 3) {
  JobBuilder b("gloo");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "2", 1, "all_reduce", false).Coll(2, "0", 3, "barrier", false);
  if (rank2_in_no_subgroup) {
    model::PgConfig& c = b.Rank(2).pg_config[""];
    c.ranks = model::SharedRanks(Ranks{0, 1, 2});
    c.ranks_known = true;
  }
  return b.World(world).Build();
}

// The kept instances of HSubJob: pg 0 seq 3, pg 1 seq 1, pg 2 seq 1.
struct HSubInstances {
  int p0, p1, p2;
};
HSubInstances FindHSub(const RankAnalysis& a, const model::Job& job) {
  return {a.instances.Find(a.groups.GroupOf(job.dumps[2], "0"), 3),
          a.instances.Find(a.groups.GroupOf(job.dumps[0], "1"), 1),
          a.instances.Find(a.groups.GroupOf(job.dumps[1], "2"), 1)};
}

TEST(RankGraph, APgOfOneRecordedMemberWaitsForAnyRankThatCanBeAnother) {
  // pg 1 is recorded by rank 0 alone: a collective of one rank cannot wait,
  // so it waits for a member that left no record, rank 1 or rank 2 (an OR
  // node: which is unknown); pg 2 likewise for rank 0 or 2. Every rank is
  // blocked, so nothing reduces: one cyclic component of all three nodes.
  model::Job job = HSubJob(false);
  RankAnalysis a = BuildRankAnalysis(job, {});
  const RankGraph& g = a.graph;
  auto [p0, p1, p2] = FindHSub(a, job);
  ASSERT_GE(p1, 0);
  ASSERT_GE(p2, 0);
  ASSERT_GE(p0, 0);
  int n1 = g.InstanceNode(p1), n2 = g.InstanceNode(p2), n0 = g.InstanceNode(p0);
  EXPECT_EQ(g.graph().kind(n1), WaitGraph::NodeKind::kOr);
  EXPECT_EQ(g.graph().kind(n0), WaitGraph::NodeKind::kAnd);  // pg 0's members are known
  ASSERT_NE(g.UnseenMembers(p1), nullptr);
  EXPECT_EQ(*g.UnseenMembers(p1), (Ranks{1, 2}));
  EXPECT_EQ(*g.UnseenMembers(p2), (Ranks{0, 2}));
  EXPECT_EQ(g.UnseenMembers(p0), nullptr);
  EXPECT_EQ(g.graph().successors(n1), (std::vector<int>{std::min(n2, n0), std::max(n2, n0)}));
  EXPECT_EQ(g.Via(n1, n2), 1);
  EXPECT_EQ(g.Via(n1, n0), 2);
  EXPECT_EQ(g.Via(n0, n1), 0);
  EXPECT_TRUE(g.dead(n0) && g.dead(n1) && g.dead(n2));
  ASSERT_EQ(g.components().size(), 1u);
  EXPECT_EQ(g.components()[0].size(), 3u);
}

// A gloo job of `world` ranks: one step on pg 0, then each (rank, pg) of
// `pending` blocked in that pg's seq 1 all_reduce.
model::Job SubGroupJob(int world, const std::vector<std::pair<int, std::string>>& pending) {
  JobBuilder b("gloo");
  for (int r = 0; r < world; ++r) b.Steps(r, "0", 1, 1);
  for (const auto& [r, pg] : pending) b.Coll(r, pg, 1, "all_reduce", false);
  return b.World(world).Build();
}

// Two gloo sub-groups first used in opposite orders (testdata/torch/
// h3_first): pg 1 recorded by ranks 0,1, both pending in seq 1, pg 2 by rank
// 2 alone. pg 2 certainly waits for 0 or 1; pg 1 would have finished with 0
// and 1 alone, and its only possible other member, rank 2, is pg 2's: pg 1
// is taken to wait for rank 2 (a reading, UnseenIsReading), and the two
// form the deadlock. Two pairs caught mid-collective (pg 1 on 0,1 and pg 2
// on 2,3, each all pending) take no such wait: neither certainly waits.
TEST(RankGraph, ASubGroupAllOfWhoseMembersWaitClosesACycleWithOneThatCertainlyDoes) {
  model::Job job = SubGroupJob(3, {{0, "1"}, {1, "1"}, {2, "2"}});
  RankAnalysis a = BuildRankAnalysis(job, {});
  int p1 = a.instances.Find(a.groups.GroupOf(job.dumps[0], "1"), 1);
  int p2 = a.instances.Find(a.groups.GroupOf(job.dumps[2], "2"), 1);
  ASSERT_TRUE(p1 >= 0 && p2 >= 0);
  ASSERT_NE(a.graph.UnseenMembers(p1), nullptr);
  EXPECT_EQ(*a.graph.UnseenMembers(p1), Ranks{2});
  EXPECT_TRUE(a.graph.UnseenIsReading(p1));
  EXPECT_EQ(*a.graph.UnseenMembers(p2), (Ranks{0, 1}));
  EXPECT_FALSE(a.graph.UnseenIsReading(p2));
  int n1 = a.graph.InstanceNode(p1), n2 = a.graph.InstanceNode(p2);
  ASSERT_EQ(a.graph.components().size(), 1u);
  EXPECT_EQ(a.graph.components()[0], (std::vector<int>{std::min(n1, n2), std::max(n1, n2)}));
  // Two pairs caught mid-collective: neither certainly waits.
  model::Job pairs = SubGroupJob(4, {{0, "1"}, {1, "1"}, {2, "2"}, {3, "2"}});
  RankAnalysis pa = BuildRankAnalysis(pairs, {});
  for (auto [dump, pg] : {std::pair{0, "1"}, std::pair{2, "2"}}) {
    int q = pa.instances.Find(pa.groups.GroupOf(pairs.dumps[dump], pg), 1);
    ASSERT_GE(q, 0);
    EXPECT_EQ(pa.graph.UnseenMembers(q), nullptr) << "pg " << pg;
  }
  EXPECT_TRUE(pa.graph.components().empty());
}

TEST(RankGraph, ARankInNoSubGroupIsNoUnrecordedMember) {
  // Rank 2's dump lists the world under pg_config '': it is in no sub-group,
  // so pg 1 waits for rank 1 only and pg 2 for rank 0 only. The cycle is
  // pg 1 <-> pg 2; rank 2's barrier waits for it from outside (dead, not in
  // the component).
  model::Job job = HSubJob(true);
  RankAnalysis a = BuildRankAnalysis(job, {});
  const RankGraph& g = a.graph;
  auto [p0, p1, p2] = FindHSub(a, job);
  EXPECT_TRUE(a.groups.InNoSubGroup(job.dumps[2], 3));
  EXPECT_FALSE(a.groups.InNoSubGroup(job.dumps[2], 4));  // not the world of 4
  EXPECT_FALSE(a.groups.InNoSubGroup(job.dumps[0], 3));  // no such entry
  EXPECT_EQ(*g.UnseenMembers(p1), Ranks{1});
  EXPECT_EQ(*g.UnseenMembers(p2), Ranks{0});
  int n1 = g.InstanceNode(p1), n2 = g.InstanceNode(p2), n0 = g.InstanceNode(p0);
  ASSERT_EQ(g.components().size(), 1u);
  EXPECT_EQ(g.components()[0], (std::vector<int>{std::min(n1, n2), std::max(n1, n2)}));
  EXPECT_TRUE(g.dead(n0));
}

TEST(RankGraph, WithTheWorldUnknownTheGivenRanksAreTheCandidates) {
  // The world not known (no --world-size, no default pg config listing it):
  // the dumps given stand for it, so pg 1 waits for rank 1 or 2, pg 2 for
  // rank 0 or 2, as with the world of 3 (every rank blocked: one component).
  model::Job unknown = HSubJob(false, -1);
  RankAnalysis a = BuildRankAnalysis(unknown, {});
  auto [p0, p1, p2] = FindHSub(a, unknown);
  ASSERT_NE(a.graph.UnseenMembers(p1), nullptr);
  EXPECT_EQ(*a.graph.UnseenMembers(p1), (Ranks{1, 2}));
  EXPECT_EQ(*a.graph.UnseenMembers(p2), (Ranks{0, 2}));
  ASSERT_EQ(a.graph.components().size(), 1u);
  EXPECT_EQ(a.graph.components()[0].size(), 3u);
}

TEST(RankGraph, TwoRanksInvertingSubGroupsWithTheWorldUnknownDeadlock) {
  // Fault A: h_sub in a world of 2, gloo, world unknown. Rank 0 pending in
  // pg 1 seq 1, rank 1 in pg 2 seq 1, each pg recorded by one rank: pg 1
  // waits for rank 1 (the only other given rank), pg 2 for rank 0. Both
  // blocked: one cycle of the two instance nodes.
  JobBuilder b("gloo");
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "2", 1, "all_reduce", false);
  model::Job job = b.World(-1).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  int p1 = a.instances.Find(a.groups.GroupOf(job.dumps[0], "1"), 1);
  int p2 = a.instances.Find(a.groups.GroupOf(job.dumps[1], "2"), 1);
  ASSERT_GE(p1, 0);
  ASSERT_GE(p2, 0);
  ASSERT_NE(a.graph.UnseenMembers(p1), nullptr);
  EXPECT_EQ(*a.graph.UnseenMembers(p1), Ranks{1});
  EXPECT_EQ(*a.graph.UnseenMembers(p2), Ranks{0});
  int n1 = a.graph.InstanceNode(p1), n2 = a.graph.InstanceNode(p2);
  ASSERT_EQ(a.graph.components().size(), 1u);
  EXPECT_EQ(a.graph.components()[0], (std::vector<int>{std::min(n1, n2), std::max(n1, n2)}));
}

TEST(RankGraph, UnrecordedMembersAreNotGuessedWhenOneCanProgress) {
  // World of 4: rank 3 left no file, so it can be pg 1's other member (a
  // sink): pg 1 can finish, and nothing is deadlocked.
  model::Job four = HSubJob(false, 4);
  RankAnalysis b = BuildRankAnalysis(four, {});
  int p1 = FindHSub(b, four).p1;
  EXPECT_EQ(*b.graph.UnseenMembers(p1), (Ranks{1, 2, 3}));
  EXPECT_FALSE(b.graph.dead(b.graph.InstanceNode(p1)));
  EXPECT_TRUE(b.graph.components().empty());
}

TEST(RankGraph, UnrecordedMembersAreNotListedPastABound) {
  // pg 1 is recorded by rank 0 alone. In a world of 65 the ranks that can be
  // its other member are 1-64: 64, the most that is listed. In worlds of 66
  // and 67 there are 65 and 66: too many to name, so no OR wait is made.
  for (int64_t world : {67, 66}) {
    model::Job job = HSubJob(false, world);
    RankAnalysis a = BuildRankAnalysis(job, {});
    EXPECT_EQ(a.graph.UnseenMembers(FindHSub(a, job).p1), nullptr) << "world " << world;
  }
  model::Job job = HSubJob(false, 65);
  RankAnalysis a = BuildRankAnalysis(job, {});
  const auto* unseen = a.graph.UnseenMembers(FindHSub(a, job).p1);
  ASSERT_NE(unseen, nullptr);
  Ranks want;
  for (model::Rank r = 1; r <= 64; ++r) want.push_back(r);
  EXPECT_EQ(*unseen, want);
}

}  // namespace
}  // namespace hangdx::analyze
