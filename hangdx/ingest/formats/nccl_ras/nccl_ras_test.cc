#include "hangdx/ingest/formats/nccl_ras/nccl_ras.h"

#include <gtest/gtest.h>

#include "hangdx/base/file.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

TEST(NcclRas, AllGatherCountsOfNccl1911) {
  std::string text = *ReadFile(std::string(HANGDX_SOURCE_DIR) +
                               "/testdata/cases/nccl1911-ras-allgather-opcount-mismatch/ncclras_status.txt");
  ASSERT_GT(SniffNcclRas(text), 0);
  std::vector<model::RankDump> d = ParseForTest(ParseNcclRas, text).dumps;
  ASSERT_EQ(d.size(), 32u);
  for (const auto& r : d) {
    ASSERT_EQ(r.ops.size(), 1u) << r.rank;
    EXPECT_EQ(r.ops[0].pg_name, "fa93daea854b060b");
    EXPECT_EQ(r.ops[0].op, "all_gather");
    bool ahead = r.rank == 12 || r.rank == 13;
    EXPECT_EQ(r.ops[0].collective_seq, ahead ? 641 : 640) << r.rank;
    EXPECT_EQ(r.ops[0].completed, !ahead) << r.rank;
    EXPECT_EQ(r.pg_config.at("fa93daea854b060b").ranks.size(), 32u);
  }
}

TEST(NcclRas, SingleOutlierForm) {
  std::string text =
      "Job summary\n===========\n\n  Nodes  Processes         GPUs  Processes     GPUs\n"
      "(total)   per node  per process    (total)  (total)\n      1          4            1          4        4\n\n"
      "Communicators... (0.01s)\n=============\n\nGroup     Comms     Nodes     Ranks     Ranks     Ranks    Status  "
      "Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n    0         1         1         4         4         "
      "4   RUNNING  MISMATCH\n\n"
      "#0-0 (fedcba9876543210) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
      "  3 ranks have launched up to operation 5004\n  Rank 1 has launched up to operation 5003 -- GPU 1 managed by "
      "process 4711 on node 10.0.0.5\n";
  std::vector<model::RankDump> d = ParseForTest(ParseNcclRas, text).dumps;
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[1].ops[0].collective_seq, 5003);
  EXPECT_TRUE(d[1].ops[0].completed);
  EXPECT_EQ(d[0].ops[0].collective_seq, 5004);
  EXPECT_FALSE(d[0].ops[0].completed);
}

TEST(NcclRas, HugeCommunicatorSizeStaysBounded) {
  // Found by nccl_ras_fuzzer: a report claiming a communicator of ~10^6
  // ranks made every rank allocate its own member list (out of memory).
  auto data =
      ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/nccl_ras/testdata/nccl_ras_oom_huge_comm");
  ASSERT_TRUE(data.ok());
  auto dumps = ParseForTest(ParseNcclRas, *data).dumps;
  EXPECT_LE(dumps.size(), size_t{1} << 17);
}

TEST(NcclRas, ARepeatedCommunicatorIsUsedOnce) {
  // Found by the ASan fuzz campaign: a 3 KB report listing one 64,033-rank
  // communicator five times (its unlisted ranks filled in each time) took
  // 10 s under ASan, 1.7 s and 262 MB in a release build.
  auto data = ReadFile(std::string(HANGDX_SOURCE_DIR) +
                       "/hangdx/ingest/formats/nccl_ras/testdata/nccl_ras_timeout_repeated_block");
  ASSERT_TRUE(data.ok());
  std::vector<model::Diagnostic> diags;
  auto dumps = ParseForTest(ParseNcclRas, *data, -1, &diags).dumps;
  size_t ops = 0;
  for (const auto& d : dumps) ops += d.ops.size();
  EXPECT_LE(ops, dumps.size());  // one op per rank: the block once
  int again = 0;
  for (const auto& d : diags) again += d.message.find("is listed again") != std::string::npos;
  EXPECT_EQ(again, 3);  // 5 headings of the one hash, 4 with counts: 3 repeats
}

}  // namespace
}  // namespace hangdx::ingest
