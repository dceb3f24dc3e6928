#include "hangdx/ingest/cross_rank/log_completion.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/formats/nccl_log/nccl_log.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

// One rank's NCCL_DEBUG=INFO log: an Init line (comm rank = global rank,
// 2 ranks, commId 0x77) and AllReduce enqueue lines with these opCounts.
std::string RankLog(int rank, std::vector<int> op_counts, bool with_send = false) {
  std::string host = "node01:" + std::to_string(100 + rank) + ":" + std::to_string(100 + rank);
  std::string text = host + " [" + std::to_string(rank) + "] NCCL INFO comm 0xc" + std::to_string(rank) + " rank " +
                     std::to_string(rank) + " nranks 2 cudaDev 0 busId 1000 commId 0x77 - Init COMPLETE\n";
  for (int k : op_counts)
    text += host + " [0] NCCL INFO AllReduce: opCount " + std::to_string(k) +
            " sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 op 0 root 0 comm 0xc" + std::to_string(rank) +
            " [nranks=2] stream 0x2\n";
  if (with_send)
    text += host +
            " [0] NCCL INFO Send: opCount 9 sendbuff 0x1 recvbuff (nil) count 8 datatype 7 op 0 root 1 comm 0xc" +
            std::to_string(rank) + " [nranks=2] stream 0x2\n";
  return text;
}

model::Job JobOf(const std::vector<std::string>& logs) {
  model::Job job;
  std::vector<model::Diagnostic> diags;
  for (size_t i = 0; i < logs.size(); ++i) {
    for (auto& d :
         ParseForTest(ParseNcclLog, logs[i], static_cast<int64_t>(i), &diags, "rank" + std::to_string(i) + ".log")
             .dumps)
      job.dumps.push_back(std::move(d));
  }
  EXPECT_TRUE(diags.empty());
  return job;
}

std::vector<bool> Completed(const model::RankDump& d) {
  std::vector<bool> v;
  for (const auto& op : d.ops) v.push_back(op.completed);
  return v;
}

TEST(NcclLogCompletion, EnqueueLinesAloneSayNothing) {
  model::Job job = JobOf({RankLog(0, {0, 1, 2})});
  ASSERT_EQ(job.dumps.size(), 1u);
  for (const auto& op : job.dumps[0].ops) {
    EXPECT_FALSE(op.completed);
    EXPECT_EQ(op.state, model::OpState::kScheduled);
  }
  // Rank 1's log is missing: whether it got past opCount 0 is unknown.
  DeriveNcclLogCompletion(&job);
  EXPECT_EQ(Completed(job.dumps[0]), (std::vector<bool>{false, false, false}));
}

TEST(NcclLogCompletion, OpsEveryMemberMovedPastAreFinished) {
  // Rank 0 enqueued opCounts 0-2, rank 1 only 0-1: both moved past 0; rank 1
  // has not moved past 1, nobody past 2.
  model::Job job = JobOf({RankLog(0, {0, 1, 2}, true), RankLog(1, {0, 1})});
  DeriveNcclLogCompletion(&job);
  ASSERT_EQ(job.dumps.size(), 2u);
  EXPECT_EQ(Completed(job.dumps[0]), (std::vector<bool>{true, false, false, false}));  // the Send stays unknown
  EXPECT_EQ(job.dumps[0].ops[0].state, model::OpState::kCompleted);
  EXPECT_TRUE(job.dumps[0].ops[0].retired);
  EXPECT_TRUE(job.dumps[0].ops[3].is_p2p);
  EXPECT_EQ(job.dumps[0].ops[3].state, model::OpState::kScheduled);
  EXPECT_EQ(Completed(job.dumps[1]), (std::vector<bool>{true, false}));
  DeriveNcclLogCompletion(&job);  // idempotent
  EXPECT_EQ(Completed(job.dumps[1]), (std::vector<bool>{true, false}));
}

TEST(NcclLogCompletion, CommSizeFromTheParsersDescription) {
  EXPECT_EQ(NcclLogCommSize("NCCL communicator of 8 ranks"), 8);
  EXPECT_EQ(NcclLogCommSize("NCCL communicator of 8 ranks, no Init line: matched across ranks by size and order"), 8);
  EXPECT_EQ(NcclLogCommSize("NCCL communicator (RAS group 0)"), -1);
  EXPECT_EQ(NcclLogCommSize("NCCL communicator of  ranks"), -1);
  EXPECT_EQ(NcclLogCommSize("NCCL communicator of 99999999999999999999 ranks"), -1);
  EXPECT_EQ(NcclLogCommSize("default_pg"), -1);
}

}  // namespace
}  // namespace hangdx::ingest
