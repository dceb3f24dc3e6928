#include "hangdx/ingest/json_util.h"

#include <gtest/gtest.h>

#include <string>

#include "hangdx/ingest/formats/device_json/device_json.h"
#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"
#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

TEST(ParseJson, BuildsTheSameDocumentAsNlohmann) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"d": []}, "e": 18446744073709551615})";
  nlohmann::json doc;
  std::string error;
  int64_t offset = -2;
  JsonDuplicates dups;
  ASSERT_TRUE(ParseJson(text, &doc, &error, &offset, &dups)) << error;
  EXPECT_EQ(doc, nlohmann::json::parse(text));
  EXPECT_EQ(dups.count, 0u);
  EXPECT_TRUE(dups.first.empty());
}

TEST(ParseJson, ADuplicateKeyKeepsTheLaterValueAndIsNamedWithItsPath) {
  // "x" twice in entries[1]; "k" twice at the top level, its second value an object.
  const std::string text = R"({"k": 1, "entries": [{"x": 1}, {"y": 0, "x": 2, "x": 3}], "k": {"z": 4}})";
  nlohmann::json doc;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  ASSERT_TRUE(ParseJson(text, &doc, &error, &offset, &dups)) << error;
  EXPECT_EQ(doc["entries"][1]["x"], 3);
  EXPECT_EQ(doc["k"], nlohmann::json({{"z", 4}}));
  EXPECT_EQ(doc["entries"][1].size(), 2u);  // y, x
  ASSERT_EQ(dups.count, 2u);
  ASSERT_EQ(dups.first.size(), 2u);
  EXPECT_EQ(dups.first[0], "\"x\" in entries[1]");
  EXPECT_EQ(dups.first[1], "\"k\" at the top level");
}

TEST(ParseJson, ManyDuplicatesAreCountedButOnlyTheFirstDescribed) {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"a\":" + std::to_string(i) + ",";
  text += "\"b\":0}";
  nlohmann::json doc;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  ASSERT_TRUE(ParseJson(text, &doc, &error, &offset, &dups));
  EXPECT_EQ(doc["a"], 99);
  EXPECT_EQ(dups.count, 99u);  // 100 "a", the first one is not a duplicate
  EXPECT_EQ(dups.first.size(), JsonDuplicates::kKept);
}

TEST(ParseJson, ErrorsGiveTheByteOfTheSyntaxErrorOrMinusOne) {
  nlohmann::json doc;
  std::string error;
  int64_t offset = 0;
  EXPECT_FALSE(ParseJson(R"({"a": [1, 2})", &doc, &error, &offset));
  EXPECT_EQ(offset, 11);  // the '}' that should have been ']'
  EXPECT_EQ(error.rfind("unreadable JSON at byte 11: ", 0), 0u) << error;
  EXPECT_FALSE(ParseJson("[1E400]", &doc, &error, &offset));
  EXPECT_EQ(offset, -1);
  EXPECT_EQ(error.rfind("unreadable JSON: number overflow", 0), 0u) << error;
  EXPECT_FALSE(ParseJson("[1] 2", &doc, &error, &offset));  // trailing text
  EXPECT_EQ(offset, 4);
}

// Every JSON reader warns, naming the key; the file is the diagnostic's.
TEST(ParseJson, EachJsonFormatWarnsOfADuplicateKey) {
  struct Case {
    bool (*parse)(const Artifact&, RecordSink*);
    std::string text, want;
  };
  const Case cases[] = {
      {ParseFlightRecorderJson, R"({"version": "2.4", "pg_config": {}, "entries": [{"record_id": 0, "record_id": 1}]})",
       "duplicate JSON key \"record_id\" in entries[0]: the later value is used"},
      {ParseWaitSnapshot, R"({"3": {"current_op": "all_reduce"}, "3": {"current_op": "barrier"}})",
       "duplicate JSON key \"3\" at the top level: the later value is used"},
      {ParseDeviceJson, R"({"hangdx_snapshot": 1, "hangdx_snapshot": 1, "ranks": []})",
       "duplicate JSON key \"hangdx_snapshot\" at the top level: the later value is used"},
  };
  for (const Case& c : cases) {
    std::vector<model::Diagnostic> diags;
    ParseForTest(c.parse, c.text, 0, &diags, "dump.json");
    bool found = false;
    for (const auto& d : diags) {
      found = found ||
              (d.message == c.want && d.file == "dump.json" && d.severity == model::Diagnostic::Severity::kWarning);
    }
    EXPECT_TRUE(found) << c.want;
  }
}

}  // namespace
}  // namespace hangdx::ingest
