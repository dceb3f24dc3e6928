#include "hangdx/analyze/passes/device_meets_rank.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using testing::MakeFinding;
using Ranks = std::vector<model::Rank>;

TEST(DeviceMeetsRankPass, ADeviceChainReplacesTheRankFindingAboutTheSameCulpritInItsPlace) {
  model::Job job;
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("missing_rank", Scope::kWaitState);
  sink.Add(MakeFinding(Kind::kMissingRank, {3}));
  sink.Add(MakeFinding(Kind::kStraggler, {5}, Severity::kWarning));
  sink.Begin("latent_order", Scope::kHistory);
  sink.Add(MakeFinding(Kind::kOrderInversion, {1}, Severity::kWarning));
  sink.Begin("device_level", Scope::kDevice);
  Finding chain = MakeFinding(Kind::kCrashedRank, {3});
  chain.summary = "chain";
  sink.Add(chain);
  sink.Add(MakeFinding(Kind::kStreamCycle, {0}));
  sink.device_edges.push_back({0, 1, "x", true});
  sink.device_ranks.push_back({7, "snap.json", "idle", "", "", 0});
  Diagnosis out;
  DeviceMeetsRankPass(a, &sink, &out);
  ASSERT_EQ(out.findings.size(), 4u);
  EXPECT_EQ(out.findings[0].summary, "chain");  // in rank 3's finding's place
  EXPECT_EQ(out.findings[1].kind, Kind::kStraggler);
  EXPECT_EQ(out.findings[2].kind, Kind::kOrderInversion);
  EXPECT_EQ(out.findings[3].kind, Kind::kStreamCycle);  // nothing to replace: appended
  ASSERT_EQ(out.edges.size(), 1u);
  ASSERT_EQ(out.ranks.size(), 1u);
  EXPECT_EQ(out.ranks[0].rank, 7);
  EXPECT_TRUE(sink.entries().empty());
}

TEST(DeviceMeetsRankPass, TheReplacementRule) {
  Finding device = MakeFinding(Kind::kMissingRank, {3});
  EXPECT_TRUE(DeviceReplaces(device, MakeFinding(Kind::kMissingRank, {3})));
  EXPECT_TRUE(DeviceReplaces(device, MakeFinding(Kind::kCrashedRank, {3})));
  EXPECT_TRUE(DeviceReplaces(device, MakeFinding(Kind::kUndecided, {3})));
  EXPECT_FALSE(DeviceReplaces(device, MakeFinding(Kind::kMissingRank, {3, 4})));                 // other culprits
  EXPECT_FALSE(DeviceReplaces(device, MakeFinding(Kind::kCollectiveMismatch, {3})));             // another kind
  EXPECT_FALSE(DeviceReplaces(device, MakeFinding(Kind::kUndecided, {3}, Severity::kWarning)));  // no hang
  Finding local = MakeFinding(Kind::kMissingRank, {3});
  local.ranks_are_pg_local = true;  // rank 3 of some pg is not global rank 3
  EXPECT_FALSE(DeviceReplaces(device, local));
  EXPECT_FALSE(DeviceReplaces(MakeFinding(Kind::kStreamCycle, {3}), MakeFinding(Kind::kMissingRank, {3})));
  EXPECT_FALSE(DeviceReplaces(MakeFinding(Kind::kMissingRank, {}), MakeFinding(Kind::kMissingRank, {})));
}

}  // namespace
}  // namespace hangdx::analyze
