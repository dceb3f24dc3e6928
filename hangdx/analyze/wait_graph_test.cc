#include "hangdx/analyze/wait_graph.h"

#include <gtest/gtest.h>

namespace hangdx::analyze {
namespace {

using K = WaitGraph::NodeKind;

TEST(WaitGraph, AndCycleIsDeadlocked) {
  WaitGraph g;
  int a = g.AddNode(K::kAnd), b = g.AddNode(K::kAnd), c = g.AddNode(K::kAnd), s = g.AddNode(K::kSink);
  g.AddEdge(a, b);
  g.AddEdge(b, a);
  g.AddEdge(c, a);  // c waits behind the cycle
  g.AddEdge(c, s);
  auto dead = g.Deadlocked();
  EXPECT_TRUE(dead[a] && dead[b] && dead[c]);
  EXPECT_FALSE(dead[s]);
  auto comps = g.CyclicComponents(dead);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0], (std::vector<int>{a, b}));
  EXPECT_EQ(g.WitnessCycle(comps[0]), (std::vector<int>{a, b}));
}

TEST(WaitGraph, OrNodeEscapesThroughOneSuccessor) {
  // An any-source receive waits for a (in a cycle) or s (free): not dead.
  WaitGraph g;
  int r = g.AddNode(K::kOr), a = g.AddNode(K::kAnd), s = g.AddNode(K::kSink);
  g.AddEdge(r, a);
  g.AddEdge(r, s);
  g.AddEdge(a, r);
  auto dead = g.Deadlocked();
  EXPECT_FALSE(dead[r]);
  EXPECT_FALSE(dead[a]);  // a waits on r, which can finish
  EXPECT_TRUE(g.CyclicComponents(dead).empty());
  // As an AND node it would be dead.
  WaitGraph h;
  r = h.AddNode(K::kAnd), a = h.AddNode(K::kAnd), s = h.AddNode(K::kSink);
  h.AddEdge(r, a);
  h.AddEdge(r, s);
  h.AddEdge(a, r);
  EXPECT_TRUE(h.Deadlocked()[r]);
}

TEST(WaitGraph, KOfNPool) {
  // A pool of 2 units held by h1, h2, h3; the waiter needs 2 of them to end.
  WaitGraph g;
  int pool = g.AddNode(K::kKofN, 2);
  int h1 = g.AddNode(K::kAnd), h2 = g.AddNode(K::kAnd), h3 = g.AddNode(K::kSink);
  g.AddEdge(pool, h1);
  g.AddEdge(pool, h2);
  g.AddEdge(pool, h3);
  g.AddEdge(h1, pool);  // h1 and h2 wait for the pool themselves
  g.AddEdge(h2, pool);
  auto dead = g.Deadlocked();
  EXPECT_TRUE(dead[pool]);  // only h3 can release: 1 < 2
  EXPECT_FALSE(dead[h3]);
  WaitGraph g2;
  pool = g2.AddNode(K::kKofN, 1);
  h1 = g2.AddNode(K::kAnd), h3 = g2.AddNode(K::kSink);
  g2.AddEdge(pool, h1);
  g2.AddEdge(pool, h3);
  g2.AddEdge(h1, pool);
  EXPECT_FALSE(g2.Deadlocked()[pool]);
}

TEST(WaitGraph, ChainToSinkIsACascadeNotADeadlock) {
  WaitGraph g;
  std::vector<int> n;
  for (int i = 0; i < 5; ++i) n.push_back(g.AddNode(K::kAnd));
  int s = g.AddNode(K::kSink);
  for (int i = 0; i + 1 < 5; ++i) g.AddEdge(n[i], n[i + 1]);
  g.AddEdge(n[4], s);
  auto dead = g.Deadlocked();
  for (int v : n) EXPECT_FALSE(dead[v]);
  EXPECT_TRUE(g.CyclicComponents().empty());
}

TEST(WaitGraph, LargeRingIsIterative) {
  // 200,000 nodes in one cycle: no recursion depth problem.
  WaitGraph g;
  const int n = 200000;
  for (int i = 0; i < n; ++i) g.AddNode(K::kAnd);
  for (int i = 0; i < n; ++i) g.AddEdge(i, (i + 1) % n);
  auto comps = g.CyclicComponents();
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0].size(), static_cast<size_t>(n));
  EXPECT_EQ(g.WitnessCycle(comps[0]).size(), static_cast<size_t>(n));
}

TEST(WaitGraph, SelfLoop) {
  WaitGraph g;
  int a = g.AddNode(K::kAnd);
  g.AddEdge(a, a);
  auto comps = g.CyclicComponents();
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(g.WitnessCycle(comps[0]), (std::vector<int>{a}));
}

}  // namespace
}  // namespace hangdx::analyze
