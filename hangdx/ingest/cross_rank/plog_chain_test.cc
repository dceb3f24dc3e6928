#include "hangdx/ingest/cross_rank/plog_chain.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/cross_rank.h"
#include "hangdx/ingest/load.h"

namespace hangdx::ingest {
namespace {

using model::DevOp;

// testdata/hccl/notify-chain: rank 0 waits for a notify from rank 1, rank 1
// for one from rank 2, whose AICPU task failed (README.md there).
TEST(PlogChain, NotifyWaitsAcrossRanksEndAtTheFailedTask) {
  LoadOptions opt;
  opt.threads = 1;
  auto job = LoadJob({std::string(HANGDX_SOURCE_DIR) + "/testdata/hccl/notify-chain"}, opt);
  ASSERT_TRUE(job.ok()) << job.status().message();
  InferAcrossRanks(&*job);
  ASSERT_EQ(job->device.size(), 1u);
  const model::DeviceJob& d = job->device[0];
  ASSERT_EQ(d.ranks.size(), 3u);
  // Worked out by hand from the three plogs:
  //   rank 0 stream 109: [Notify Wait task 38 (notify 0x213 from rank 1)]
  //   rank 1 stream 111: [Notify Wait task 52 (notify 0x215 from rank 2), Record of 0x213]
  //   rank 2 stream 2:   [AICPU task 19016 (failed), Record of 0x215]
  auto head = [&](size_t r, size_t pos) -> const DevOp& { return d.ops[d.ranks[r].streams.at(0).tasks.at(pos)]; };
  EXPECT_EQ(d.ranks[0].streams[0].name, "109");
  ASSERT_EQ(d.ranks[0].streams[0].tasks.size(), 1u);
  EXPECT_EQ(head(0, 0).kind, DevOp::Kind::kWait);
  EXPECT_EQ(head(0, 0).event, "notify 0x213 from rank 1 of hccl_world_group to rank 0");
  EXPECT_EQ(d.ranks[1].streams[0].name, "111");
  ASSERT_EQ(d.ranks[1].streams[0].tasks.size(), 2u);
  EXPECT_EQ(head(1, 0).event, "notify 0x215 from rank 2 of hccl_world_group to rank 1");
  EXPECT_EQ(head(1, 1).kind, DevOp::Kind::kRecord);
  EXPECT_EQ(head(1, 1).event, head(0, 0).event);
  EXPECT_EQ(d.ranks[2].streams[0].name, "2");
  ASSERT_EQ(d.ranks[2].streams[0].tasks.size(), 2u);
  EXPECT_TRUE(head(2, 0).failed);
  EXPECT_EQ(head(2, 0).name, "AICPU task 19016 (kernel failed, error 21008)");
  EXPECT_EQ(head(2, 1).kind, DevOp::Kind::kRecord);
  EXPECT_EQ(head(2, 1).event, head(1, 0).event);
  for (const auto& r : d.ranks) EXPECT_TRUE(r.streams[0].head_started);
}

TEST(PlogChain, UnmappedRemoteAloneMakesNoChain) {
  // One plog (vllm-ascend#3413): the remote is rank 24 of group_name_1654,
  // whose global rank no file tells: nothing to chain, no record invented.
  LoadOptions opt;
  auto job = LoadJob({std::string(HANGDX_SOURCE_DIR) +
                      "/testdata/cases/vllm-ascend3413-hccl-notify-wait-remote-rank/rank101_plog.txt"},
                     opt);
  ASSERT_TRUE(job.ok());
  InferAcrossRanks(&*job);
  EXPECT_TRUE(job->device.empty());
}

TEST(PlogChain, KnownRemoteWithoutLogIsTheOneThatNeverSent) {
  // The chain of testdata/hccl/notify-chain without rank 2's plog: rank 1
  // waits for rank 2 (world group: global 2), which left no log.
  LoadOptions opt;
  std::string dir = std::string(HANGDX_SOURCE_DIR) + "/testdata/hccl/notify-chain/";
  auto job = LoadJob({dir + "plog-30411_20251011150934713.log", dir + "plog-30412_20251011150934902.log"}, opt);
  ASSERT_TRUE(job.ok());
  InferAcrossRanks(&*job);
  ASSERT_EQ(job->device.size(), 1u);
  const model::DeviceJob& d = job->device[0];
  ASSERT_EQ(d.event_producer_rank.size(), 1u);
  EXPECT_EQ(d.event_producer_rank.begin()->first, "notify 0x215 from rank 2 of hccl_world_group to rank 1");
  EXPECT_EQ(d.event_producer_rank.begin()->second, 2);
  EXPECT_EQ(d.event_producer.begin()->second, "rank 2 (no log from it in these files)");
}

TEST(PlogChain, NothingToChainGivesNoDeviceJob) {
  model::Job job;
  job.dumps.emplace_back();
  job.dumps[0].rank = 0;
  BuildPlogDeviceJob(&job);
  EXPECT_TRUE(job.device.empty());
}

}  // namespace
}  // namespace hangdx::ingest
