#include "hangdx/base/rank_set.h"

#include <gtest/gtest.h>

namespace hangdx {
namespace {

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

}  // namespace
}  // namespace hangdx
