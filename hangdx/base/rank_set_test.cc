#include "hangdx/base/rank_set.h"

#include <gtest/gtest.h>

namespace hangdx {
namespace {

TEST(RankWords, OneManyAndCut) {
  EXPECT_EQ(RankWords({3}), "rank 3");
  EXPECT_EQ(RankWords({3, 3}), "rank 3");  // a duplicate is one rank
  EXPECT_EQ(RankWords({5, 0, 1, 2}), "ranks 0-2,5");
  // 30 even ranks: "0,2,...,58" is 84 characters; the last comma at or
  // before character 48 is the one after "34" (index 48), so the text stops at 34.
  std::vector<int64_t> even;
  for (int64_t r = 0; r < 60; r += 2) even.push_back(r);
  EXPECT_EQ(RankWords(even), "ranks 0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,... (30 ranks)");
}

TEST(FormatRanks, Ranges) {
  EXPECT_EQ(FormatRanks({}), "");
  EXPECT_EQ(FormatRanks({3}), "3");
  EXPECT_EQ(FormatRanks({9, 0, 1, 2, 3, 5, 7, 8, 3}), "0-3,5,7-9");
}

TEST(FormatRanks, ThousandRanksFitOnALine) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < 1024; ++i)
    if (i != 512) r.push_back(i);
  EXPECT_EQ(FormatRanks(r), "0-511,513-1023");
}

TEST(ParseRanks, RoundTrip) {
  std::vector<int64_t> r;
  ASSERT_TRUE(ParseRanks("0-3,5,7-9", &r));
  EXPECT_EQ(r, (std::vector<int64_t>{0, 1, 2, 3, 5, 7, 8, 9}));
  EXPECT_FALSE(ParseRanks("3-1", &r));
  EXPECT_FALSE(ParseRanks("a", &r));
  EXPECT_FALSE(ParseRanks("0-99999999999", &r));
}

TEST(Count, NounAgreesWithTheNumber) {
  EXPECT_EQ(Count(1, "seq", "seqs"), "1 seq");
  EXPECT_EQ(Count(0, "seq", "seqs"), "0 seqs");
  EXPECT_EQ(Count(12, "rank has", "ranks have"), "12 ranks have");
}

}  // namespace
}  // namespace hangdx
