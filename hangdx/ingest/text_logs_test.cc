#include "hangdx/ingest/text_logs.h"

#include <gtest/gtest.h>

#include <random>

#include "hangdx/base/file.h"

namespace hangdx::ingest {
namespace {

TEST(TextLogs, MixedFileOneDumpPerRank) {
  std::string text = *ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/testdata/mixed_rank2.log");
  std::vector<model::RankDump> out;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseTextArtifact(text, "mixed_rank2.log", 2, &out, &diags));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rank, 2);
  EXPECT_EQ(out[0].ops.size(), 3u);  // two NCCL enqueues + the watchdog timeout on PG 1
  EXPECT_EQ(out[0].ops[2].pg_name, "1");
  EXPECT_EQ(out[0].ops[2].collective_seq, 7);
}

TEST(TextLogs, UnknownAndJsonAreNotText) {
  std::vector<model::RankDump> out;
  std::vector<model::Diagnostic> diags;
  EXPECT_FALSE(ParseTextArtifact("hello world\n", "a", 0, &out, &diags));
  EXPECT_FALSE(ParseTextArtifact("{\"kind\": \"missing_rank\", \"notes\": \"opCount 0\"}", "a", 0, &out, &diags));
  EXPECT_FALSE(ParseTextArtifact(std::string("\0\0\0NCCL INFO ", 14), "a", 0, &out, &diags));
  EXPECT_TRUE(out.empty());
}

TEST(TextLogs, RandomJunkAroundAnchorsNeverCrashes) {
  std::mt19937 rng(7);
  const char* anchors[] = {" NCCL INFO AllReduce: opCount ",
                           "Watchdog caught collective operation timeout: WorkNCCL(",
                           "Thread 1 (idle)\n    ",
                           "] HCCL(",
                           "#0-0 (0123456789abcdef) ",
                           "Communicators",
                           "CollectiveFingerPrint(SequenceNumber=",
                           "File \"",
                           "remote rank:[",
                           "\r",
                           "\x1b["};
  for (int i = 0; i < 300; ++i) {
    std::string s;
    for (int k = 0; k < 40; ++k) {
      if (rng() % 3 == 0)
        s += anchors[rng() % std::size(anchors)];
      else
        s += static_cast<char>(rng() % 256);
      if (rng() % 5 == 0) s += '\n';
    }
    std::vector<model::RankDump> out;
    std::vector<model::Diagnostic> diags;
    ParseTextArtifact(s, "junk", static_cast<int64_t>(i % 3) - 1, &out, &diags);
  }
}

}  // namespace
}  // namespace hangdx::ingest
