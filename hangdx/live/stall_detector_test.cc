#include "hangdx/live/stall_detector.h"

#include <gtest/gtest.h>

namespace hangdx::live {
namespace {

using std::chrono::seconds;

std::vector<PgProgress> At(int64_t enqueued, int64_t completed, std::string pg = "0") {
  return {PgProgress{pg, enqueued, -1, completed}};
}

class StallDetectorTest : public ::testing::Test {
 protected:
  // Four ranks in lockstep up to seq `steps`, one report per second.
  void Run(int steps) {
    for (int s = 1; s <= steps; ++s, t += seconds(1))
      for (Rank r = 0; r < 4; ++r) d.Observe(r, t, At(s, s));
  }
  StallDetector d{{seconds(5)}};
  Clock::time_point t{seconds(1000)};
};

TEST_F(StallDetectorTest, MissingRankStallsAfterStallAfterOnce) {
  Run(3);
  // Ranks 0-2 enter seq 4; rank 3 stays in user code.
  for (int i = 0; i < 10; ++i, t += seconds(1)) {
    for (Rank r = 0; r < 3; ++r) d.Observe(r, t, At(4, 3));
    d.Observe(3, t, At(3, 3));
    auto stalls = d.Check(t);
    if (i < 5) {
      EXPECT_TRUE(stalls.empty()) << "at " << i;
    } else if (i == 5) {
      ASSERT_EQ(stalls.size(), 1u);
      EXPECT_EQ(stalls[0].reason, Stall::Reason::kNoProgress);
      EXPECT_EQ(stalls[0].pgs, std::vector<std::string>{"0"});
      EXPECT_EQ(stalls[0].ranks, (std::vector<Rank>{0, 1, 2, 3}));
      EXPECT_EQ(stalls[0].behind, std::vector<Rank>{3});
      EXPECT_EQ(stalls[0].key, "pg 0 at 3/4");
    } else {
      EXPECT_TRUE(stalls.empty()) << "reported once per episode, at " << i;
    }
  }
  auto pgs = d.Pgs(t);
  ASSERT_EQ(pgs.size(), 1u);
  EXPECT_TRUE(pgs[0].stalled);
  EXPECT_EQ(pgs[0].behind, std::vector<Rank>{3});
}

TEST_F(StallDetectorTest, DueSaysOncePerQuietSpellWhenStallAfterPassed) {
  Run(3);
  auto last = t - seconds(1);  // the last change
  EXPECT_FALSE(d.Due(last + seconds(4)));
  EXPECT_TRUE(d.Due(last + seconds(5)));
  EXPECT_FALSE(d.Due(last + seconds(6))) << "said once per quiet spell";
  // An answer that changes a counter starts a new spell, due 5 s later.
  t = last + seconds(7);
  d.Observe(0, t, At(4, 3));
  EXPECT_FALSE(d.Due(t + seconds(4)));
  d.Observe(1, t + seconds(5), At(3, 3));  // an answer without progress
  EXPECT_TRUE(d.Due(t + seconds(5)));
  // Due is a hint: Check decides (the stall is there and new).
  ASSERT_EQ(d.Check(t + seconds(5)).size(), 1u);
  EXPECT_FALSE(d.Due(t + seconds(9)));
}

TEST_F(StallDetectorTest, SlowButProgressingNeverStalls) {
  // Every 4 s (less than stall_after) the slow rank 3 arrives and the seq completes.
  for (int s = 1; s <= 10; ++s) {
    for (int w = 0; w < 4; ++w, t += seconds(1)) {
      for (Rank r = 0; r < 3; ++r) d.Observe(r, t, At(s, s - 1));
      d.Observe(3, t, At(s - 1, s - 1));
      EXPECT_TRUE(d.Check(t).empty());
    }
  }
}

TEST_F(StallDetectorTest, IdleJobWithNothingUnfinishedIsNoStall) {
  Run(3);
  for (int i = 0; i < 20; ++i, t += seconds(1)) {
    for (Rank r = 0; r < 4; ++r) d.Observe(r, t, At(3, 3));
    EXPECT_TRUE(d.Check(t).empty());
  }
}

TEST_F(StallDetectorTest, SilentRankWhileOthersAnswer) {
  Run(3);
  // Rank 1 dies; the others' ops failed and count completed (gloo).
  for (int i = 0; i < 8; ++i, t += seconds(1)) {
    for (Rank r : {0, 2, 3}) d.Observe(r, t, At(4, 4));
    d.Unanswered(1, t);
    auto stalls = d.Check(t);
    if (i == 4) {  // last answer at t0 - 1 s: silent for 5 s now
      ASSERT_EQ(stalls.size(), 1u);
      EXPECT_EQ(stalls[0].reason, Stall::Reason::kSilentRank);
      EXPECT_EQ(stalls[0].silent, std::vector<Rank>{1});
      EXPECT_EQ(stalls[0].ranks, (std::vector<Rank>{0, 1, 2, 3}));
    } else {
      EXPECT_TRUE(stalls.empty()) << "at " << i;
    }
  }
  EXPECT_EQ(d.Silent(t), std::vector<Rank>{1});
}

TEST_F(StallDetectorTest, EveryRankSilentIsAJobThatEnded) {
  Run(3);
  t += seconds(10);
  EXPECT_TRUE(d.JobGone(t));
  EXPECT_TRUE(d.Check(t).empty());
}

TEST_F(StallDetectorTest, TwoPgsStallTogetherAndRestoreKeepsTheEpisode) {
  for (Rank r = 0; r < 2; ++r) {
    d.Observe(r, t, {PgProgress{"1", 1, -1, 1}, PgProgress{"2", 1, -1, 1}});
  }
  t += seconds(1);
  d.Observe(0, t, {PgProgress{"1", 2, -1, 1}, PgProgress{"2", 1, -1, 1}});
  d.Observe(1, t, {PgProgress{"1", 1, -1, 1}, PgProgress{"2", 2, -1, 1}});
  Clock::time_point changed = t;
  for (int i = 0; i < 6; ++i, t += seconds(1)) {
    d.Observe(0, t, {PgProgress{"1", 2, -1, 1}, PgProgress{"2", 1, -1, 1}});
    d.Observe(1, t, {PgProgress{"1", 1, -1, 1}, PgProgress{"2", 2, -1, 1}});
  }
  auto stalls = d.Check(t);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].pgs, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(stalls[0].since, changed);
  // A restarted watch that restores the counters and the reported key
  // finds the same episode and does not report it again.
  StallDetector again({seconds(5)});
  again.Restore(0, {PgProgress{"1", 2, -1, 1}, PgProgress{"2", 1, -1, 1}}, changed, t);
  again.Restore(1, {PgProgress{"1", 1, -1, 1}, PgProgress{"2", 2, -1, 1}}, changed, t);
  auto keys = stalls[0].key;
  for (size_t at = 0, next; at < keys.size(); at = next + 2) {
    next = keys.find("; ", at);
    if (next == std::string::npos) next = keys.size();
    again.MarkReported(keys.substr(at, next - at));
  }
  EXPECT_TRUE(again.Check(t).empty());
  StallDetector fresh({seconds(5)});
  fresh.Restore(0, {PgProgress{"1", 2, -1, 1}}, changed, t);
  fresh.Restore(1, {PgProgress{"1", 1, -1, 1}}, changed, t);
  EXPECT_EQ(fresh.Check(t).size(), 1u);
}

TEST(ProgressTest, ReadsPgStatusAndSkipsTheRest) {
  std::string fr = R"({"comm_lib_version":"","entries":[{"collective_seq_id":1,"profiling_name":"x\"}]{"}],)"
                   R"("pg_config":{"":{"desc":"","name":"","ranks":"[0, 1, 2]"}},)"
                   R"("pg_status":{"0":{"last_completed_collective":"3","last_enqueued_collective":"4",)"
                   R"("last_started_collective":"-1"},"1":{"last_completed_collective":5}},"version":"2.10"})";
  auto p = ParseProgress(fr, true);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->pgs.size(), 2u);
  EXPECT_EQ(p->pgs[0], (PgProgress{"0", 4, -1, 3}));
  EXPECT_EQ(p->pgs[1].completed, 5);
  EXPECT_EQ(p->version, "2.10");
  EXPECT_EQ(p->members.at(""), (std::vector<Rank>{0, 1, 2}));
  EXPECT_FALSE(ParseProgress("{\"entries\": []}", false).ok());
  EXPECT_FALSE(ParseProgress("not json", false).ok());
  EXPECT_FALSE(ParseProgress("{\"pg_status\": [1, 2]}", false).ok());
  EXPECT_EQ(TopLevelValue(R"({"a": {"b": [1, {"c": "}"}]}, "d" : 7 })", "d"), "7");
  EXPECT_EQ(TopLevelValue(R"({"a": "unterminated)", "a"), "");
}

TEST(ProgressTest, CompactRoundTrip) {
  std::vector<PgProgress> pgs{{"0", 12, -1, 11}, {"1", 5, -1, 5}};
  EXPECT_EQ(FormatCompact(pgs), "0=12/11,1=5/5");
  std::vector<PgProgress> back;
  ASSERT_TRUE(ParseCompact("0=12/11,1=5/5", &back));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].enqueued, 12);
  EXPECT_EQ(back[1].completed, 5);
  std::vector<PgProgress> bad;
  EXPECT_FALSE(ParseCompact("0=12", &bad));
  EXPECT_FALSE(ParseCompact("0=a/b", &bad));
}

}  // namespace
}  // namespace hangdx::live
