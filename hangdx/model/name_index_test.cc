#include "hangdx/model/name_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hangdx::model {
namespace {

// The list and the hash map (past kLinear names) answer alike: first
// insertion wins, equal text found from another buffer, absent is -1.
TEST(NameIndexTest, SameAnswersBelowAndPastTheLinearLimit) {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("pg" + std::to_string(i));
  NameIndex idx;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(idx.Insert(names[i], i), i);
    EXPECT_EQ(idx.Insert(names[i], 1000 + i), i);  // already there: kept
    for (int k = 0; k <= i; ++k) EXPECT_EQ(idx.Find(std::string("pg" + std::to_string(k))), k) << i << " " << k;
    EXPECT_EQ(idx.Find("pg" + std::to_string(i + 1)), -1);
  }
  EXPECT_EQ(idx.entries().size(), 100u);
  EXPECT_EQ(idx.entries()[42].first, "pg42");
}

}  // namespace
}  // namespace hangdx::model
