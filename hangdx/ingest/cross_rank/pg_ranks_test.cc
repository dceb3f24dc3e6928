#include "hangdx/ingest/cross_rank/pg_ranks.h"

#include <gtest/gtest.h>

#include "hangdx/base/file.h"
#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"
#include "hangdx/ingest/formats/nccl_log/nccl_log.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

// Moves what *diags holds to the end of job->diagnostics.
void Append(model::DiagnosticSink* diags, model::Job* job) {
  for (auto& d : diags->Take()) job->diagnostics.push_back(std::move(d));
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

// vllm-ascend#3413: global rank 101 (group rank 25) waits for rank 24 of
// group_name_1654. A second plog, made from it: global rank 7 is group rank
// 24 and waits for group rank `waits_for`.
model::Job HcclJob(bool with_rank7, int waits_for) {
  std::string real = *ReadFile(std::string(HANGDX_SOURCE_DIR) +
                               "/testdata/cases/vllm-ascend3413-hccl-notify-wait-remote-rank/rank101_plog.txt");
  std::vector<std::string> texts{real};
  if (with_rank7) {
    std::string seven = Replace(real, "RankID:101", "RankID:7");
    seven = Replace(seven, "rankId[25 24]", "rankId[24 " + std::to_string(waits_for) + "]");
    seven = Replace(seven, "remote rank: [24]", "remote rank: [" + std::to_string(waits_for) + "]");
    seven = Replace(seven, "remote rank:[24]", "remote rank:[" + std::to_string(waits_for) + "]");
    texts.push_back(seven);
  }
  model::Job job;
  for (size_t i = 0; i < texts.size(); ++i) {
    for (auto& d : ParseForTest(ParseHcclPlog, texts[i], -1, &job.diagnostics, "plog" + std::to_string(i)).dumps)
      job.dumps.push_back(std::move(d));
  }
  std::sort(job.dumps.begin(), job.dumps.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return job;
}

TEST(PgLocalRanks, HcclGroupRankOfTheAwaitedRankMapsTheWait) {
  model::DiagnosticSink diags;
  model::Job job = HcclJob(true, 3);
  ASSERT_EQ(job.dumps.size(), 2u);
  EXPECT_EQ(job.dumps[1].rank, 101);
  EXPECT_EQ(job.dumps[1].pg_config.at("group_name_1654").self_local, 25);
  EXPECT_EQ(job.dumps[0].pg_config.at("group_name_1654").self_local, 24);
  auto map = PgLocalRankMap(job, nullptr);
  EXPECT_EQ(map["group_name_1654"], (std::map<int64_t, model::Rank>{{24, 7}, {25, 101}}));
  MapPgLocalRanks(&job, &diags);
  Append(&diags, &job);
  // Rank 101 waited for group rank 24 = global rank 7.
  const auto& w101 = *job.dumps[1].wait;
  EXPECT_FALSE(w101.pg_local);
  EXPECT_EQ(w101.waiting_for, (std::vector<model::Rank>{7}));
  // Rank 7 waits for group rank 3, which no file names: still pg-local.
  const auto& w7 = *job.dumps[0].wait;
  EXPECT_TRUE(w7.pg_local);
  EXPECT_EQ(w7.waiting_for, (std::vector<model::Rank>{3}));
  bool said = false;
  for (const auto& d : job.diagnostics)
    said = said || d.message.find("rank 24 of pg group_name_1654 is global rank 7 (plog1)") != std::string::npos;
  EXPECT_TRUE(said);
  // 2 of 32 members known: no member list.
  EXPECT_FALSE(job.dumps[1].pg_config.at("group_name_1654").ranks_known);
}

TEST(PgLocalRanks, WithoutTheAwaitedRanksFileTheWaitStaysLocal) {
  model::DiagnosticSink diags;
  model::Job job = HcclJob(false, 0);
  MapPgLocalRanks(&job, &diags);
  Append(&diags, &job);
  ASSERT_EQ(job.dumps.size(), 1u);
  EXPECT_TRUE(job.dumps[0].wait->pg_local);
  EXPECT_EQ(job.dumps[0].wait->waiting_for, (std::vector<model::Rank>{24}));
}

// Two processes, global ranks 4 and 6 of an 8-rank world, share a 2-rank
// communicator 0x9f in which they are ranks 0 and 1.
std::string NcclProc(int global, int local) {
  std::string h = "node01:" + std::to_string(200 + global) + ":" + std::to_string(200 + global) + " [" +
                  std::to_string(global) + "] NCCL INFO ";
  return h + "comm 0xa" + std::to_string(global) + " rank " + std::to_string(global) +
         " nranks 8 cudaDev 0 busId 1000 commId 0xworld0 - Init COMPLETE\n" + h + "comm 0xb" + std::to_string(global) +
         " rank " + std::to_string(local) + " nRanks 2 cudaDev 0 busId 1000 commId 0x9f - Init COMPLETE\n" + h +
         "AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 op 0 root 0 comm 0xb" +
         std::to_string(global) + " [nranks=2] stream 0x2\n";
}

TEST(PgLocalRanks, NcclInitLinesGiveASubCommunicatorItsMembers) {
  model::DiagnosticSink diags;
  model::Job job;
  for (auto [g, l] : {std::pair{4, 0}, std::pair{6, 1}}) {
    for (auto& d :
         ParseForTest(ParseNcclLog, NcclProc(g, l), -1, &job.diagnostics, "rank" + std::to_string(g) + ".log").dumps)
      job.dumps.push_back(std::move(d));
  }
  ASSERT_EQ(job.dumps.size(), 2u);
  EXPECT_EQ(job.dumps[0].rank, 4);                              // its rank in the largest communicator
  EXPECT_FALSE(job.dumps[0].pg_config.at("0x9f").ranks_known);  // one file cannot tell
  MapPgLocalRanks(&job, &diags);
  Append(&diags, &job);
  for (const auto& d : job.dumps) {
    const auto& cfg = d.pg_config.at("0x9f");
    EXPECT_TRUE(cfg.ranks_known);
    EXPECT_EQ(cfg.ranks, (std::vector<model::Rank>{4, 6}));
  }
}

TEST(PgLocalRanks, TwoRanksClaimingOneLocalRankAreNotMapped) {
  model::Job job;
  for (int g : {4, 6}) {
    for (auto& d :
         ParseForTest(ParseNcclLog, NcclProc(g, 0), -1, &job.diagnostics, "rank" + std::to_string(g) + ".log").dumps)
      job.dumps.push_back(std::move(d));
  }
  model::DiagnosticSink diags;
  auto map = PgLocalRankMap(job, &diags);
  Append(&diags, &job);
  EXPECT_TRUE(map["0x9f"].empty());
  EXPECT_NE(job.diagnostics.back().message.find("both say they are rank 0 of pg 0x9f"), std::string::npos);
}

}  // namespace
}  // namespace hangdx::ingest
