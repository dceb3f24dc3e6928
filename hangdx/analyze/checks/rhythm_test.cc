// The job's rhythm: a wait many times the usual step is a stall (a hang
// finding), a wait within it a straggler warning. Times set by hand.
#include "hangdx/analyze/checks/rhythm.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/analyze/checks/missing_rank.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

constexpr int64_t kSecond = 1'000'000'000;

// gloo ranks 0-3 finished seqs 1-5 of pg 0, seq k created at k s on every
// rank; ranks 0-2 are in seq 6 (created at 6 s, in flight, no timeout);
// rank 3 is idle. `waited_ms` >= 0: rank 0's log says it has waited that
// long in seq 6 (a stall warning).
model::Job RankThreeBehind(int64_t waited_ms) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 5);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 6, "all_reduce", /*done=*/false);
  if (waited_ms >= 0) {
    model::LogEvent e;
    e.kind = model::LogEvent::Kind::kStall;
    e.message = "rank 0 has waited in all_reduce";
    e.waited_ms = waited_ms;
    b.Event(0, e);
  }
  model::Job job = b.Build();
  for (auto& d : job.dumps)
    for (auto& op : d.ops) {
      op.time_created_ns = op.collective_seq * kSecond;
      op.time_started_ns = 0;
      op.time_completed_ns = op.collective_seq < 6 ? op.time_created_ns + kSecond / 2 : 0;
    }
  return job;
}

TEST(Rhythm, TheMedianGapBetweenCollectivesAndTheLongestKnownWait) {
  model::Job job = RankThreeBehind(30000);
  RankAnalysis a = BuildRankAnalysis(job, {});
  const Instance* six = nullptr;
  for (const Instance& in : a.instances.list)
    if (in.seq == 6) six = &in;
  ASSERT_NE(six, nullptr);
  Rhythm r = RhythmOf(a, *six);
  // Seqs 1-5 on each of the 3 arrived ranks: 4 gaps of 1 s each.
  EXPECT_EQ(r.gaps, 12);
  EXPECT_EQ(r.step_ns, kSecond);
  // The records end at 6 s (seq 6's creation): the log's 30 s is longer.
  EXPECT_EQ(r.waited_ns, 30 * kSecond);
  EXPECT_TRUE(r.Overdue());
  EXPECT_EQ(r.Words(),
            "the ranks that arrived have waited at least 30.0 s, 30 times the usual 1.0 s between two collectives "
            "of this pg");
}

TEST(Rhythm, AWaitManyStepsLongIsAHangBeforeAnyTimeout) {
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, RankThreeBehind(30000));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_EQ(fs[0].severity, Severity::kError);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].details[0],
            "the ranks that arrived have waited at least 30.0 s, 30 times the usual 1.0 s between two collectives "
            "of this pg");
}

TEST(Rhythm, AWaitWithinTheRhythmIsAStraggler) {
  // 5 s is 5 steps, under kStallFactor (10): slow, not hung.
  for (int64_t waited_ms : {int64_t{-1}, int64_t{5000}, int64_t{9999}}) {
    SCOPED_TRACE(waited_ms);
    std::vector<Finding> fs = RunCheck(&MissingRankCheck, RankThreeBehind(waited_ms));
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].kind, Kind::kStraggler);
    EXPECT_FALSE(fs[0].hang);
    EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  }
  // Exactly 10 steps is overdue.
  EXPECT_EQ(RunCheck(&MissingRankCheck, RankThreeBehind(10000))[0].kind, Kind::kMissingRank);
}

TEST(Rhythm, TooFewGapsSayNothing) {
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce", false);
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  for (const Instance& in : a.instances.list) {
    if (in.seq != 3) continue;
    Rhythm r = RhythmOf(a, in);
    EXPECT_EQ(r.gaps, 1);  // seqs 1-2 of rank 0
    EXPECT_EQ(r.step_ns, 0);
    EXPECT_FALSE(r.Overdue());
    EXPECT_EQ(r.Words(), "");
  }
}

}  // namespace
}  // namespace hangdx::analyze
