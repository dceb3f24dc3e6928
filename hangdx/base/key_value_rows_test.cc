#include "hangdx/base/key_value_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hangdx {
namespace {

TEST(KeyValueRows, RowsAreSeparatedByBlankLinesAndCommentsAreSkipped) {
  std::vector<std::string> seen;
  Status s = ReadKeyValueRows(
      "# header\nbug a\nframe  ^x y\r\nflag\n\n\n# between\nbug b\n",
      [&](const KeyValueLine& l) {
        seen.push_back(std::to_string(l.line) + (l.starts_row ? "*" : "") + std::string(l.key) + "=" +
                       std::string(l.value));
        return Status::Ok();
      },
      [&] {
        seen.push_back("end");
        return Status::Ok();
      });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"2*bug=a", "3frame=^x y", "4flag=", "end", "8*bug=b", "end"}));
}

TEST(KeyValueRows, TheFirstErrorStopsTheRead) {
  int lines = 0;
  Status s = ReadKeyValueRows(
      "a 1\nb 2\nc 3\n",
      [&](const KeyValueLine& l) {
        return ++lines == 2 ? InvalidArgument("line " + std::to_string(l.line)) : Status::Ok();
      },
      [] { return Status::Ok(); });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "line 2");
  EXPECT_EQ(lines, 2);
}

}  // namespace
}  // namespace hangdx
