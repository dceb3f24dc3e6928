#include "hangdx/report/report.h"

#include <gtest/gtest.h>

#include "hangdx/report/json_writer.h"

namespace hangdx::report {
namespace {

analyze::Diagnosis Sample() {
  analyze::Diagnosis d;
  d.hang = true;
  d.verdict = "HANG: ranks 0-2 wait.";
  analyze::Finding f;
  f.kind = analyze::Kind::kMissingRank;
  f.summary = "ranks 0-2 wait in all_reduce for rank 3";
  f.pg_name = "0";
  f.pg_desc = "default_pg";
  f.seq = 5;
  f.op = "all_reduce";
  f.culprit_ranks = {3};
  f.roles = {{"arrived", {0, 1, 2}}, {"never arrived", {3}}};
  f.evidence = {{"trace_0", 0, 4, "arrived"}};
  d.findings.push_back(f);
  d.edges = {{0, 3, "pg 0 seq 5 all_reduce", false}};
  analyze::RankSummary r;
  r.rank = 0;
  r.file = "trace_0";
  d.ranks.push_back(r);
  return d;
}

TEST(Report, TextFirstLineIsTheVerdict) {
  std::string t = RenderText(Sample());
  EXPECT_EQ(t.substr(0, t.find('\n')), "HANG: ranks 0-2 wait.");
  EXPECT_NE(t.find("arrived: 0-2"), std::string::npos) << t;
  EXPECT_NE(t.find("trace_0 (rank 0, record 4)"), std::string::npos) << t;
}

TEST(Report, JsonSchema) {
  auto j = ToJson(Sample());
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["hang"], true);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["kind"], "missing_rank");
  EXPECT_EQ(j["findings"][0]["culprit_ranks"], nlohmann::json::array({3}));
  EXPECT_EQ(j["findings"][0]["pg"]["name"], "0");
  EXPECT_EQ(j["findings"][0]["seq"], 5);
  EXPECT_EQ(j["findings"][0]["evidence"][0]["record_id"], 4);
}

TEST(Report, DotIsAGraph) {
  std::string dot = RenderDot(Sample());
  EXPECT_EQ(dot.rfind("digraph wait_for {", 0), 0u);
  EXPECT_NE(dot.find("r0 -> r3"), std::string::npos);
  EXPECT_NE(dot.find("fillcolor"), std::string::npos);  // the culprit is marked
}

// Chains of frames with the same ranks are one node; ids are depth-first,
// parents first, the larger class first.
TEST(Report, StacksJsonIsAFlatListOfChains) {
  analyze::StackTree t;
  t.root.ranks = {0, 1, 2};
  analyze::StackNode main{"main", {0, 1, 2}, {}}, loop{"loop", {0, 1, 2}, {}};
  loop.children = {{"broadcast", {1, 2}, {{"wait", {1, 2}, {}}}}, {"all_reduce", {0}, {}}};
  main.children = {loop};
  t.root.children = {main};
  t.cut = {2};
  auto j = StacksToJson(t);
  EXPECT_EQ(j["schema_version"], kStacksSchemaVersion);
  const auto& n = j["nodes"];
  ASSERT_EQ(n.size(), 4u) << n.dump();
  EXPECT_TRUE(n[0]["parent"].is_null());
  EXPECT_EQ(n[0]["frames"].size(), 0u);
  EXPECT_EQ(n[0]["children"], nlohmann::json::array({1}));
  EXPECT_EQ(n[1]["frames"], nlohmann::json::array({"main", "loop"}));
  EXPECT_EQ(n[1]["children"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(n[2]["frames"], nlohmann::json::array({"broadcast", "wait"}));
  EXPECT_EQ(n[2]["ranks"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(n[3]["parent"], 1);
  EXPECT_EQ(n[3]["frames"], nlohmann::json::array({"all_reduce"}));
  EXPECT_EQ(j["cut"], nlohmann::json::array({2}));
  EXPECT_NE(RenderStacksText(t).find("Stacks cut at their innermost 1024 frames"), std::string::npos);
}

// Every JSON document goes through WriteJson: bytes that are not UTF-8
// become U+FFFD instead of an exception.
TEST(JsonWriter, InvalidUtf8IsReplacedNeverThrown) {
  nlohmann::ordered_json j;
  j["frame"] = std::string("bad \xff\xfe byte");
  j["ok"] = "caf\xc3\xa9";
  EXPECT_EQ(WriteJson(j), "{\n  \"frame\": \"bad \xef\xbf\xbd\xef\xbf\xbd byte\",\n  \"ok\": \"caf\xc3\xa9\"\n}\n");
}

}  // namespace
}  // namespace hangdx::report
