// The causes pass: the cause leads, its consequence is attached to it.
#include "hangdx/analyze/passes/causes.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using model::testing::RankRange;
using testing::MakeFinding;
using Ranks = std::vector<model::Rank>;

TEST(CausesPass, ADeathOfTheMismatchIsAttachedToIt) {
  // gloo aborts rank 1 when the sizes it receives do not match: the size
  // mismatch (rank 1 the odd one) is the cause, its crash the consequence.
  model::Job job = JobBuilder().Steps(0, "0", 1, 2).Steps(1, "0", 1, 2).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("collective_mismatch", Scope::kWaitState);
  sink.Add(MakeFinding(Kind::kSizeMismatch, {1}));
  sink.Begin("crashed_rank", Scope::kWaitState);
  Finding crash = MakeFinding(Kind::kCrashedRank, {1});
  crash.summary = "rank 1 crashed";
  crash.evidence.push_back({"rank1.log", 1, -1, "line 9: Connection reset"});
  sink.Add(crash);
  CausesPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.kind, Kind::kSizeMismatch);
  EXPECT_EQ(f.culprit_ranks, Ranks{1});
  ASSERT_EQ(f.roles.size(), 1u);
  EXPECT_EQ(f.roles[0].role, "crashed");
  EXPECT_EQ(f.roles[0].ranks, Ranks{1});
  ASSERT_EQ(f.details.size(), 1u);
  EXPECT_EQ(f.details[0], "rank 1 crashed in it: rank 1 crashed");
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].note, "line 9: Connection reset");
}

TEST(CausesPass, ACrashOutsideTheMismatchStaysItsOwnFinding) {
  model::Job job = JobBuilder().Steps(0, "0", 1, 2).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("collective_mismatch", Scope::kWaitState);
  sink.Add(MakeFinding(Kind::kCollectiveMismatch, {0}));
  sink.Begin("crashed_rank", Scope::kWaitState);
  sink.Add(MakeFinding(Kind::kCrashedRank, {5}));
  CausesPass(a, &sink, nullptr);
  EXPECT_EQ(sink.entries().size(), 2u);
}

// Ranks 0-3 are members of pg 0 and rank `crashed` crashed; the stall
// check found pg 0 stalled (ranks 0-2 in its all_reduce, none finishing).
// Runs the pass on those two findings.
std::vector<FindingEntry> CrashAndStall(model::Rank crashed) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 2);
  model::Job job = b.Members("0", RankRange(0, 4)).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("crashed_rank", Scope::kWaitState);
  sink.Add(MakeFinding(Kind::kCrashedRank, {crashed}));
  sink.Begin("stall", Scope::kWaitState);
  Finding stall = MakeFinding(Kind::kUndecided, {});
  stall.pg_name = "0";
  stall.pg_desc = "default_pg";
  stall.op = "all_reduce";
  stall.summary = "ranks 0-2 wait in all_reduce";
  stall.roles.push_back({"arrived", {0, 1, 2}});
  sink.Add(stall);
  CausesPass(a, &sink, nullptr);
  return sink.entries();
}

TEST(CausesPass, AStalledPgOfACrashedMemberIsTheCrashsConsequence) {
  std::vector<FindingEntry> out = CrashAndStall(3);
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0].finding;
  EXPECT_EQ(f.kind, Kind::kCrashedRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  ASSERT_EQ(f.roles.size(), 1u);
  EXPECT_EQ(f.roles[0].role, "waiting in all_reduce");
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2}));
  EXPECT_EQ(f.details, std::vector<std::string>{"its consequence: ranks 0-2 wait in all_reduce"});
}

TEST(CausesPass, AStallOfAPgTheCrashedRankIsNotInStays) { EXPECT_EQ(CrashAndStall(9).size(), 2u); }

}  // namespace
}  // namespace hangdx::analyze
