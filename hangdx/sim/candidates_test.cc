#include "hangdx/sim/candidates.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace hangdx::sim {
namespace {

// Next agrees with a std::set across three summary levels.
TEST(IdSet, NextMatchesAnOrderedSet) {
  const int32_t n = 300000;
  IdSet ids(n);
  std::set<int32_t> ref;
  std::mt19937 rng(7);
  for (int k = 0; k < 20000; ++k) {
    int32_t i = static_cast<int32_t>(rng() % n);
    if (rng() % 3) {
      ids.Insert(i);
      ref.insert(i);
    } else {
      ids.Erase(i);
      ref.erase(i);
    }
    int32_t probe = static_cast<int32_t>(rng() % n);
    auto it = ref.lower_bound(probe);
    ASSERT_EQ(ids.Next(probe), it == ref.end() ? -1 : *it) << probe;
    ASSERT_EQ(ids.Contains(i), ref.count(i) == 1);
  }
  std::vector<int32_t> all;
  for (int32_t i = ids.Next(0); i >= 0; i = ids.Next(i + 1)) all.push_back(i);
  EXPECT_EQ(all, std::vector<int32_t>(ref.begin(), ref.end()));
  EXPECT_EQ(IdSet(0).Next(0), -1);
  EXPECT_EQ(ids.Next(n), -1);
}

TEST(Candidates, StartFullAndUndoToAMark) {
  Candidates c(3, 1, 2);
  EXPECT_EQ(c.Of(Candidates::kStream).Next(0), 0);
  c.Drop(Candidates::kStream, 0);
  size_t mark = c.TrailSize();
  c.Drop(Candidates::kStream, 1);
  c.Drop(Candidates::kQueue, 0);
  c.Add(Candidates::kStream, 0);
  c.Add(Candidates::kStream, 2);  // already in: not recorded
  EXPECT_EQ(c.TrailSize(), mark + 3);
  EXPECT_EQ(c.Of(Candidates::kStream).Next(0), 0);
  EXPECT_EQ(c.Of(Candidates::kStream).Next(1), 2);
  c.Undo(mark);
  EXPECT_EQ(c.Of(Candidates::kStream).Next(0), 1);
  EXPECT_TRUE(c.Of(Candidates::kQueue).Contains(0));
  EXPECT_TRUE(c.Of(Candidates::kIssue).Contains(1));
}

}  // namespace
}  // namespace hangdx::sim
