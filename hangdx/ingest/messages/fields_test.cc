#include "hangdx/ingest/messages/fields.h"

#include <gtest/gtest.h>

namespace hangdx::ingest::messages {
namespace {

TEST(Fields, NormalizesOpNamesOfEveryProducer) {
  for (const char* s : {"ALLREDUCE", "AllReduce", "allreduce", "HcclAllReduce", "all_reduce", "ncclAllReduce"})
    EXPECT_EQ(NormalizeOpName(s), "all_reduce") << s;
  EXPECT_EQ(NormalizeOpName("ReduceScatter"), "reduce_scatter");
  EXPECT_EQ(NormalizeOpName("REDUCE_SCATTER"), "reduce_scatter");
  EXPECT_EQ(NormalizeOpName("AllGather"), "all_gather");
  EXPECT_EQ(NormalizeOpName("ALLTOALL_BASE"), "all_to_all_single");
  EXPECT_EQ(NormalizeOpName("Broadcast"), "broadcast");
  EXPECT_EQ(NormalizeOpName("RECVANYSOURCE"), "recv_any_source");
  EXPECT_EQ(NormalizeOpName("_ALLGATHER_BASE"), "_allgather_base");
}

TEST(Fields, ParsesRankListsInEverySpelling) {
  std::vector<int64_t> v;
  ASSERT_TRUE(ParseRankList("[0, 3,5]", &v));
  EXPECT_EQ(v, (std::vector<int64_t>{0, 3, 5}));
  v.clear();
  ASSERT_TRUE(ParseRankList("{1 2} 4-6", &v));
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2, 4, 5, 6}));
  v.clear();
  EXPECT_FALSE(ParseRankList("0-4294967295", &v));  // not a list to allocate
  EXPECT_FALSE(ParseRankList("3-1", &v));
  EXPECT_FALSE(ParseRankList("rank two", &v));
}

TEST(Fields, ConvertsUnitsAndKeepsTheFirstScalar) {
  MessageFields f;
  std::string err;
  ASSERT_TRUE(SetField("timeout_s", "1800", &f, &err));
  EXPECT_EQ(f.timeout_ms, 1800000);
  ASSERT_TRUE(SetField("elapsed_s", "2.5", &f, &err));
  EXPECT_EQ(f.elapsed_ms, 2500);
  ASSERT_TRUE(SetField("signal", "SIGKILL", &f, &err));
  EXPECT_EQ(f.signal, 9);
  ASSERT_TRUE(SetField("exit_code", "-9", &f, &err));
  EXPECT_EQ(f.exit_code, -9);
  ASSERT_TRUE(SetField("opcount", "1a", &f, &err));  // NCCL prints opCount in hex
  EXPECT_EQ(f.opcount, 26);
  ASSERT_TRUE(SetField("seq", "7", &f, &err));
  ASSERT_TRUE(SetField("seq", "8", &f, &err));
  EXPECT_EQ(f.seq, 7);
  ASSERT_TRUE(SetField("ranks", "1", &f, &err));
  ASSERT_TRUE(SetField("ranks", "3", &f, &err));
  EXPECT_EQ(FieldsToMap(f)["ranks"], "1,3");
  EXPECT_EQ(FieldsToMap(f)["timeout_ms"], "1800000");
  EXPECT_FALSE(SetField("seq", "seven", &f, &err));
  EXPECT_EQ(err, "capture 'seq' = 'seven' is not a non-negative integer");
  EXPECT_FALSE(SetField("nonsense", "1", &f, &err));
}

}  // namespace
}  // namespace hangdx::ingest::messages
