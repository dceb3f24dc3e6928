#include "hangdx/report/report.h"

#include <gtest/gtest.h>

#include "hangdx/report/json_writer.h"
#include "hangdx/report/rank_classes.h"

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

// Ranks 1-3 have no usable dump; rank 2's file was unreadable: it is named
// once, as unreadable, and the text's "without:" lists 1 and 3.
TEST(Report, AnUnreadableRankIsNotAlsoWithout) {
  analyze::Diagnosis d = Sample();
  d.world_size = 4;
  d.ranks_without_dump = {1, 2, 3};
  d.unreadable[2] = "trace_2";
  d.world_size_inferred = false;
  std::string t = RenderText(d);
  EXPECT_NE(t.find("Ranks with data: 0; unreadable: 2; without: 1,3\n"), std::string::npos) << t;
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

// A RankSummary of rank r.
analyze::RankSummary Summary(int64_t r, const std::string& state, const std::string& current) {
  analyze::RankSummary s;
  s.rank = r;
  s.file = "snap.json";
  s.state = state;
  s.current = current;
  return s;
}

// Ranks in one state waiting on ranks in one state are one class, however
// many ranks each waits on; a different state, or waits on ranks in a
// different state, is another class.
TEST(RankClasses, SameStateWaitingOnTheSameStatesIsOneClass) {
  analyze::Diagnosis d;
  for (int64_t r : {0, 1, 2}) d.ranks.push_back(Summary(r, "blocked", "all_reduce seq 7"));
  d.ranks.push_back(Summary(3, "blocked", "all_reduce seq 8"));
  for (int64_t r : {4, 5}) d.ranks.push_back(Summary(r, "idle", "forward"));
  d.ranks.push_back(Summary(6, "idle", "checkpoint"));
  d.edges = {{0, 4, "all_reduce seq 7", false},
             {0, 5, "all_reduce seq 7", false},
             {1, 5, "all_reduce seq 7", false},
             {2, 6, "all_reduce seq 7", false},
             {3, 4, "all_reduce seq 8", false}};
  RankClasses c = ClassifyRanks(d);
  ASSERT_EQ(c.classes.size(), 5u);
  EXPECT_EQ(c.of, (std::vector<int>{0, 0, 1, 2, 3, 3, 4}));
  EXPECT_EQ(c.classes[0].ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(c.classes[0].waits_for, (std::vector<int>{3}));
  EXPECT_EQ(c.classes[1].waits_for, (std::vector<int>{4}));
  EXPECT_EQ(c.classes[3].count, 2);
  EXPECT_TRUE(c.classes[3].waits_for.empty());
  auto j = ToJson(d);
  EXPECT_EQ(j["rank_class"], nlohmann::json::array({0, 0, 1, 2, 3, 3, 4}));
  EXPECT_EQ(j["rank_classes"][1]["state"], "blocked");
  EXPECT_EQ(j["rank_classes"][1]["lowest_rank"], 2);
  EXPECT_EQ(j["ranks_listed"], "all");
  EXPECT_EQ(j["ranks"].size(), 7u);
}

// Past 4,096 ranks the JSON lists one rank per class and the text report a
// line per class with its ranks cut to fit.
TEST(RankClasses, ALargeReportListsRanksByClass) {
  analyze::Diagnosis d;
  for (int64_t r = 0; r < 10000; ++r)
    d.ranks.push_back(Summary(r, r % 3 ? "blocked" : "idle", r % 3 ? "all_reduce seq 7" : "forward"));
  for (int64_t r = 1; r < 10000; r += 3) d.edges.push_back({r, r - 1, "all_reduce seq 7", false});
  for (int64_t r = 2; r < 10000; r += 3) d.edges.push_back({r, r - 1, "all_reduce seq 7", false});
  auto j = ToJson(d);
  EXPECT_EQ(j["ranks_listed"], "one per class");
  EXPECT_EQ(j["ranks"].size(), 3u);
  EXPECT_EQ(j["rank_class"].size(), 10000u);
  EXPECT_EQ(j["wait_for_graph"]["edge_count"], d.edges.size());
  EXPECT_EQ(j["wait_for_graph"]["edges"].size(), 0u);  // none in a cycle
  std::string t = RenderText(d);
  EXPECT_NE(t.find("Rank classes (10000 ranks in 3 classes"), std::string::npos) << t;
  EXPECT_NE(t.find("#1 [3333 ranks] blocked, all_reduce seq 7, waiting for ranks of class #0: 1,4,7,"),
            std::string::npos)
      << t;
  for (size_t a = 0, b; (b = t.find('\n', a)) != std::string::npos; a = b + 1) EXPECT_LT(b - a, 300u);
}

// Long arrays of numbers are written on one line; short ones and others
// as nlohmann's dump(2) does.
TEST(JsonWriter, LongArraysOfNumbersOnOneLine) {
  nlohmann::ordered_json j;
  j["few"] = {1, 2};
  j["many"] = std::vector<int>(20, 7);
  j["empty"] = nlohmann::ordered_json::array();
  j["obj"] = nlohmann::ordered_json::object();
  j["x"] = {{"y", -1.5}};
  EXPECT_EQ(WriteJson(j),
            "{\n  \"few\": [\n    1,\n    2\n  ],\n  \"many\": [7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7],\n"
            "  \"empty\": [],\n  \"obj\": {},\n  \"x\": {\n    \"y\": -1.5\n  }\n}\n");
  nlohmann::ordered_json k = {{"few", {1, 2}}, {"x", {{"y", -1.5}}}, {"s", "a\"b"}};
  EXPECT_EQ(WriteJson(k), k.dump(2) + "\n");
}

}  // namespace
}  // namespace hangdx::report
