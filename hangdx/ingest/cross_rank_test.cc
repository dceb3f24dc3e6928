#include "hangdx/ingest/cross_rank.h"

#include <gtest/gtest.h>

#include <set>

#include "hangdx/ingest/load.h"

namespace hangdx::ingest {
namespace {

TEST(CrossRank, PassesAreNamedAndSayWhy) {
  std::set<std::string_view> names;
  for (const CrossRankPass& p : CrossRankPasses()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.why.empty()) << p.name;
    EXPECT_NE(p.run, nullptr);
  }
  // Completion needs the communicators named; plog chains need global ranks.
  auto at = [&](std::string_view name) {
    for (size_t i = 0; i < CrossRankPasses().size(); ++i)
      if (CrossRankPasses()[i].name == name) return i;
    return CrossRankPasses().size();
  };
  EXPECT_LT(at("nccl-anonymous-comms"), at("nccl-log-completion"));
  EXPECT_LT(at("pg-local-ranks"), at("hccl-plog-chains"));
  EXPECT_LT(at("hccl-plog-chains"), CrossRankPasses().size());
}

TEST(CrossRank, LoadingAloneDoesNotChainRanks) {
  // testdata/hccl/notify-chain: three plogs whose notify waits chain across
  // ranks. Each file alone says nothing about the chain; the pass does.
  LoadOptions opt;
  opt.threads = 1;
  auto job = LoadJob({std::string(HANGDX_SOURCE_DIR) + "/testdata/hccl/notify-chain"}, opt);
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->device.empty());
  size_t before = job->diagnostics.size();
  InferAcrossRanks(&*job);
  EXPECT_EQ(job->device.size(), 1u);
  EXPECT_GE(job->diagnostics.size(), before);  // appended, never replaced
}

}  // namespace
}  // namespace hangdx::ingest
