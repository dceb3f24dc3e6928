#include "hangdx/report/report.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hangdx::report
