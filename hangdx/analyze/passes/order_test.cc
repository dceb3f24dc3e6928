#include "hangdx/analyze/passes/order.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"

namespace hangdx::analyze {
namespace {

using testing::MakeFinding;

TEST(OrderPass, ErrorsFirstThenTheHeavierThenTableOrder) {
  Finding warn = MakeFinding(Kind::kStraggler, {1}, Severity::kWarning);
  warn.blocked_behind = {2, 3, 4, 5};  // heavier, but a warning
  Finding light = MakeFinding(Kind::kMissingRank, {1});
  light.summary = "light";
  light.roles.push_back({"arrived", {0}});  // weight 1
  Finding heavy = MakeFinding(Kind::kMissingRank, {2});
  heavy.roles.push_back({"arrived", {0, 1}});  // weight 2 + 1 behind
  heavy.blocked_behind = {4};
  Finding tie = MakeFinding(Kind::kCrashedRank, {3});
  tie.summary = "tie";
  tie.cycle = {7};  // weight 1, after `light` in table order
  Diagnosis out;
  out.findings = {warn, light, heavy, tie};
  EXPECT_EQ(FindingWeight(heavy), 3u);
  OrderPass(BuildRankAnalysis(model::Job(), {}), nullptr, &out);
  ASSERT_EQ(out.findings.size(), 4u);
  EXPECT_EQ(out.findings[0].culprit_ranks, std::vector<model::Rank>{2});
  EXPECT_EQ(out.findings[1].summary, "light");
  EXPECT_EQ(out.findings[2].summary, "tie");
  EXPECT_EQ(out.findings[3].severity, Severity::kWarning);
}

}  // namespace
}  // namespace hangdx::analyze
