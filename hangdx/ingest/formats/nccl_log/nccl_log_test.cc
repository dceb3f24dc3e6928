#include "hangdx/ingest/formats/nccl_log/nccl_log.h"

#include <gtest/gtest.h>

#include "hangdx/base/file.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

std::vector<model::RankDump> Parse(std::string_view text, int64_t hint) {
  return ParseForTest(ParseNcclLog, text, hint).dumps;
}

TEST(NcclLog, EnqueueLineFromNccl147) {
  // NVIDIA/nccl#147, rank 1: two broadcasts on one comm, no Init line.
  auto d = Parse(
      "node01:32617:32617 [1] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f3bfe7f5400 recvbuff 0x7f3bfe7f5400 count 53 "
      "datatype 4 op 0 root 0 comm 0x7f3bf405a260 [nranks=8] stream 0x55d5ffb73110\n"
      "node01:32617:32617 [1] NCCL INFO Broadcast: opCount 1 sendbuff 0x7f3be4000000 recvbuff 0x7f3be4000000 count "
      "25503912 datatype 6 op 0 root 0 comm 0x7f3bf405a260 [nranks=8] stream 0x55d5ffb73110\n",
      1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 1);
  EXPECT_FALSE(d[0].from_flight_recorder);
  ASSERT_EQ(d[0].ops.size(), 2u);
  const auto& a = d[0].ops[0];
  EXPECT_EQ(a.pg_name, "nccl-comm:n8#0");
  EXPECT_EQ(a.collective_seq, 0);
  EXPECT_EQ(a.op, "broadcast");
  EXPECT_EQ(a.backend, "nccl");
  EXPECT_EQ(*a.input_sizes, (model::Shapes{{53}}));
  EXPECT_EQ(*a.input_dtypes, (model::Dtypes{"Long"}));
  EXPECT_FALSE(a.completed);  // enqueued; completion is not in the log
  EXPECT_EQ(a.state, model::OpState::kScheduled);
  EXPECT_EQ(*d[0].ops[1].input_dtypes, (model::Dtypes{"Half"}));
  EXPECT_FALSE(d[0].ops[1].completed);
  EXPECT_EQ(d[0].pg_config.at("nccl-comm:n8#0").desc.rfind("NCCL communicator of 8 ranks", 0), 0u);
  ASSERT_TRUE(d[0].pg_config.count("nccl-comm:n8#0"));
  EXPECT_EQ(d[0].pg_config.at("nccl-comm:n8#0").ranks.size(), 8u);
  EXPECT_TRUE(d[0].pg_config.at("nccl-comm:n8#0").ranks_known);
}

// The enqueue line is read without a regex; lines it does not take as they
// start go to the regex, which reads them as before: a first occurrence cut
// short (glued output) with a whole one after it; a root of -1 and no
// [nranks=] (NCCL before 2.12) are read; a count past int64 is not.
TEST(NcclLog, EnqueueLinesTheFastReaderLeavesToTheRegex) {
  auto d = Parse(
      "node01:1:1 [0] NCCL INFO AllReduce: opCount 3 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root -1 "
      "comm 0x10 stream 0x20\n"
      "node01:1:1 [0] NCCL INFO AllReduce: opCount 4 sendbuff |Broadcast: opCount 5 sendbuff "
      "0x1 recvbuff 0x2 count 9 datatype 7 op 0 root 0 comm 0x10 [nranks=2] stream 0x20\n"
      "node01:1:1 [0] NCCL INFO AllReduce: opCount 6 sendbuff 0x1 recvbuff 0x2 count 99999999999999999999 datatype "
      "7 op 0 root 0 comm 0x10 [nranks=2] stream 0x20\n",
      0);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].ops.size(), 2u);
  EXPECT_EQ(d[0].ops[0].collective_seq, 3);
  EXPECT_EQ(d[0].ops[0].op, "all_reduce");
  EXPECT_EQ(d[0].ops[1].collective_seq, 5);
  EXPECT_EQ(d[0].ops[1].op, "broadcast");
  EXPECT_EQ(*d[0].ops[1].input_sizes, (model::Shapes{{9}}));
}

TEST(NcclLog, InitLineGivesRankAndCommIdHexOpCount) {
  std::string text = *ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/testdata/mixed_rank2.log");
  auto d = Parse(text, -1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 2);  // from "comm 0x55aa rank 2 nranks 4"
  EXPECT_EQ(d[0].comm_lib_version, "2.18.5+cuda12.2");
  ASSERT_EQ(d[0].ops.size(), 2u);
  EXPECT_EQ(d[0].ops[0].pg_name, "0xabc123");
  EXPECT_EQ(d[0].ops[0].collective_seq, 0x1a);
  EXPECT_EQ(d[0].ops[1].op, "all_gather");
  EXPECT_EQ(*d[0].ops[1].output_sizes, (model::Shapes{{64}}));
  EXPECT_EQ(*d[0].ops[1].input_dtypes, (model::Dtypes{"BFloat16"}));
}

// NCCL_DEBUG_FILE=%h.%p names a file node01.32621.log: its number is the
// pid of its lines. With no Init line the records stay under that number,
// and a warning says it is no rank; with one, the Init line's rank is used
// and nothing is said. A file number that is not the pid is a rank.
TEST(NcclLog, AFileNamedByItsPidSaysItIsNoRank) {
  const std::string op =
      "node01:32621:32621 [3] NCCL INFO Broadcast: opCount 0 sendbuff 0x7efb7e7f5400 recvbuff 0x7efb7e7f5400 count 53 "
      "datatype 4 op 0 root 0 comm 0x7efb7405a260 [nranks=8] stream 0x5604f5ef4de0\n";
  std::vector<model::Diagnostic> diags;
  auto d = ParseForTest(ParseNcclLog, op, 32621, &diags).dumps;
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 32621);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("is the process id of its lines (node01:32621"), std::string::npos)
      << diags[0].message;
  diags.clear();
  d = ParseForTest(ParseNcclLog, op, 3, &diags).dumps;
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 3);
  EXPECT_TRUE(diags.empty());
  const std::string init =
      "node01:32621:32700 [3] NCCL INFO comm 0x7efb7405a260 rank 3 nranks 8 cudaDev 3 busId 3d000 - Init COMPLETE\n";
  d = ParseForTest(ParseNcclLog, init + op, 32621, &diags).dumps;
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 3);
  EXPECT_TRUE(diags.empty());
}

TEST(NcclLog, InterleavedLinesAndPrefixlessLines) {
  // NVIDIA/nccl#147: two prefixes glued; a bare enqueue line of the same comm.
  auto d = Parse(
      "learnfair062:32619:32711 [2] NCCL INFO learnfair062:32629:32629 [7] NCCL INFO Broadcast: opCount 0 sendbuff "
      "0x1 recvbuff 0x1 count 53 datatype 4 op 0 root 0 comm 0xc7 [nranks=8] stream 0x2\n"
      "learnfair062:32629:32629 [7] NCCL INFO comm 0xc7 rank 7 nranks 8 cudaDev 7 busId 1000 - Init COMPLETE\n"
      "Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 53 datatype 4 op 0 root 0 comm 0xc7 [nranks=8] stream "
      "0x2\n",
      -1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 7);
  ASSERT_EQ(d[0].ops.size(), 2u);
  EXPECT_EQ(d[0].ops[1].collective_seq, 1);
}

TEST(NcclLog, SendRecvAndWarn) {
  auto d = Parse(
      "ubuntu:199574:201142 [1] NCCL INFO comm 0x7f5128002e10 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x77 - Init "
      "COMPLETE\n"
      "ubuntu:199574:201142 [1] NCCL INFO Recv: opCount d60 sendbuff (nil) recvbuff 0x7f5176000000 count 2420736 "
      "datatype 7 op 0 root 0 comm 0x7f5128002e10 [nranks=2] stream 0x55f1de727ae0\n"
      "\nubuntu:199574:201142 [1] misc/socket.cc:49 NCCL WARN Cuda failure 'an illegal memory access was "
      "encountered'\n",
      -1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_TRUE(d[0].ops[0].is_p2p);
  EXPECT_EQ(d[0].ops[0].p2p_seq, 0xd60);
  EXPECT_EQ(d[0].ops[0].profiling_name, "nccl:recv 1<-0");
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kCrash);
}

TEST(NcclLog, JunkNeverCrashes) {
  std::string junk = "x NCCL INFO AllReduce: opCount zz sendbuff\n\xff\xfe NCCL WARN \0\n";
  junk += std::string(100000, ':') + " NCCL INFO : opCount \n";
  auto d = Parse(junk, -1);
  EXPECT_TRUE(d.empty() || d[0].ops.empty());
}

}  // namespace
}  // namespace hangdx::ingest
