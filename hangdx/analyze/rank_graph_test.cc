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

}  // namespace
}  // namespace hangdx::analyze
