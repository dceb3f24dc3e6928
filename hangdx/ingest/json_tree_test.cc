#include "hangdx/ingest/json_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace hangdx::ingest {
namespace {

using Kind = JsonTree::Kind;

TEST(JsonTree, ReadsValuesAsNlohmannClassesThem) {
  JsonTree t;
  ASSERT_TRUE(t.Parse(R"({"i": -3, "u": 18446744073709551615, "big": 9223372036854775807, "d": 1.5e3, "z": -0,)"
                      R"( "s": "a\"\u00e9\n", "n": null, "b": true, "a": [1, [2, 3], {}], "o": {"k": "v"}})"));
  const JsonTree::Value& r = t.root();
  ASSERT_EQ(r.kind, Kind::kObject);
  EXPECT_EQ(r.size, 10u);
  EXPECT_EQ(t.Find(r, "i")->kind, Kind::kInt);
  EXPECT_EQ(t.Find(r, "i")->i, -3);
  EXPECT_EQ(t.Find(r, "u")->kind, Kind::kUint);
  EXPECT_EQ(t.Find(r, "u")->u, 18446744073709551615u);
  EXPECT_EQ(t.Find(r, "big")->kind, Kind::kInt);
  EXPECT_EQ(t.Find(r, "d")->kind, Kind::kDouble);
  EXPECT_EQ(t.Find(r, "d")->d, 1500.0);
  EXPECT_EQ(t.Find(r, "z")->kind, Kind::kInt);
  std::string_view s;
  ASSERT_TRUE(t.Find(r, "s")->str(&s));
  EXPECT_EQ(s, "a\"\xc3\xa9\n");
  EXPECT_EQ(t.Find(r, "n")->kind, Kind::kNull);
  EXPECT_TRUE(t.Find(r, "b")->b);
  const JsonTree::Value& a = *t.Find(r, "a");
  ASSERT_EQ(a.kind, Kind::kArray);
  ASSERT_EQ(a.size, 3u);
  EXPECT_EQ(t.Element(a, 0).i, 1);
  EXPECT_EQ(t.Element(t.Element(a, 1), 1).i, 3);
  EXPECT_EQ(t.Element(a, 2).kind, Kind::kObject);
  EXPECT_EQ(t.Element(a, 2).size, 0u);
  ASSERT_TRUE(t.Key(r, 9).str(&s));
  EXPECT_EQ(s, "o");  // members in the document's order
  ASSERT_TRUE(t.Find(t.Member(r, 9), "k")->str(&s));
  EXPECT_EQ(s, "v");
  EXPECT_EQ(t.Find(r, "missing"), nullptr);
  EXPECT_EQ(t.Find(a, "i"), nullptr);  // not an object
}

TEST(JsonTree, SkipsAByteOrderMarkAndReadsScalarsAtTheTop) {
  JsonTree t;
  ASSERT_TRUE(t.Parse("\xEF\xBB\xBF{\"a\": 1}"));
  EXPECT_EQ(t.Find(t.root(), "a")->i, 1);
  ASSERT_TRUE(t.Parse(" 5 "));
  EXPECT_EQ(t.root().i, 5);
}

// What nlohmann reads with a warning, reads otherwise or refuses is left to
// ParseJson (the caller's fallback), so that its messages stay the users'.
TEST(JsonTree, LeavesToNlohmannWhatItWouldReadOrReportDifferently) {
  const char* refused[] = {
      "",
      "{\"a\": 1",      // truncated
      "{\"a\": 1} {}",  // trailing text
      "[1,]",           // a trailing comma
      "[NaN]",          // Python's json.dumps writes it; nlohmann refuses it too
      "[Infinity]",
      "{\"a\": \"\xff\"}",               // not UTF-8
      "{\"a\": \"x\x01y\"}",             // an unescaped control character
      "{\"a\": 1, \"a\": 2}",            // a repeated key (warned of, the later kept)
      "{\"b\": 1, \"a\": 2, \"b\": 3}",  // the same, keys not in order
      "[\"\\ud83d\\ude00\"]",            // a surrogate pair: checked by nlohmann
      "[\"\\udc00\"]",                   // a lone low surrogate
      "[18446744073709551616]",          // beyond 64 bits: nlohmann makes it a double
      "[-9223372036854775809]",
      "[1E400]",     // out of range
      "\xEF\xBB{}",  // half a byte order mark
  };
  for (const char* text : refused) {
    JsonTree t;
    EXPECT_FALSE(t.Parse(text)) << text;
  }
  std::string deep(1100, '[');
  deep += std::string(1100, ']');
  JsonTree t;
  EXPECT_FALSE(t.Parse(deep));
  std::string ok(1000, '[');
  ok += std::string(1000, ']');
  EXPECT_TRUE(t.Parse(ok));
  EXPECT_TRUE(t.Parse(R"(["\\ud800 is text, not an escape"])"));
}

TEST(JsonTree, KeysOfOneObjectDifferAtAnySize) {
  std::string big = "{";
  for (int i = 0; i < 3000; ++i) big += (i ? ",\"" : "\"") + std::to_string((i * 7919) % 3000) + "\": 0";
  JsonTree t;
  ASSERT_TRUE(t.Parse(big + "}"));  // 3,000 distinct keys, not in order
  EXPECT_EQ(t.root().size, 3000u);
  EXPECT_FALSE(t.Parse(big + ",\"17\": 1}"));
}

}  // namespace
}  // namespace hangdx::ingest
