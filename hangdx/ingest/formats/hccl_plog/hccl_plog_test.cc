#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"

#include <gtest/gtest.h>

#include "hangdx/base/file.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

TEST(HcclPlog, NotifyWaitTimeoutOfVllmAscend3413) {
  std::string text = *ReadFile(std::string(HANGDX_SOURCE_DIR) +
                               "/testdata/cases/vllm-ascend3413-hccl-notify-wait-remote-rank/rank101_plog.txt");
  ASSERT_GT(SniffHcclPlog(text), 0);
  std::vector<model::RankDump> d = ParseForTest(ParseHcclPlog, text, -1).dumps;
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 101);  // RankID:101 of the PTA header
  EXPECT_FALSE(d[0].from_flight_recorder);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_EQ(d[0].ops[0].pg_name, "group_name_1654");
  EXPECT_EQ(d[0].ops[0].op, "all_reduce");
  EXPECT_EQ(d[0].ops[0].backend, "hccl");
  EXPECT_EQ(d[0].ops[0].collective_seq, -1);
  EXPECT_FALSE(d[0].ops[0].completed);
  const model::LogEvent* timeout = nullptr;
  for (const auto& e : d[0].events)
    if (e.kind == model::LogEvent::Kind::kTimeout) timeout = &e;
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ(timeout->pg, "group_name_1654");
  EXPECT_EQ(timeout->op, "all_reduce");
  EXPECT_NE(timeout->message.find("remote rank 24"), std::string::npos);
  EXPECT_NE(timeout->message.find("rankSize 32"), std::string::npos);
  EXPECT_NE(timeout->message.find("streamID 109 taskID 38"), std::string::npos);
}

TEST(HcclPlog, FieldsAndEntryLines) {
  EXPECT_EQ(HcclField("base information: [streamID:[109], taskID[38], tag[AllReduce_x]]", "streamID"), "109");
  EXPECT_EQ(HcclField("remote rank: [24]. x", "remote rank"), "24");
  EXPECT_EQ(HcclField("stage:[0], tag[T]", "tag"), "T");
  EXPECT_EQ(HcclField("truncated tag[abc", "tag"), "abc");
  std::string text =
      "[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [hccl_opbase_atrace_info.cc:56][3017221]"
      "Entry-HcclAllReduce: tag[AllReduce_127.10.0.1%eth_60000_0_1], sendBuf[0x1], recvBuf[0x2], count[10746295], "
      "dataType[float32], op[sum], localRank[0], streamId[7],comm[0xfffe380078d0], deviceLogicId[0]\n"
      "[INFO] HCCL(3015875,python):2025-03-07-11:43:33.305.623 [hccl_opbase_atrace_info.cc:56][3017221]"
      "Entry-HcclAllGather: tag[AllGather_127.10.0.1%eth_60000_0_1], count[4], dataType[bf16], localRank[0]\n";
  std::vector<model::RankDump> d = ParseForTest(ParseHcclPlog, text, 6).dumps;
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].ops.size(), 2u);
  EXPECT_EQ(d[0].ops[0].pg_name, "127.10.0.1%eth_60000_0_1");
  EXPECT_EQ(d[0].ops[0].collective_seq, 0);
  EXPECT_EQ(*d[0].ops[0].input_dtypes, (model::Dtypes{"Float"}));
  EXPECT_TRUE(d[0].ops[0].completed);
  EXPECT_EQ(d[0].ops[1].op, "all_gather");
  EXPECT_EQ(d[0].ops[1].collective_seq, 1);
  EXPECT_FALSE(d[0].ops[1].completed);
}

}  // namespace
}  // namespace hangdx::ingest
