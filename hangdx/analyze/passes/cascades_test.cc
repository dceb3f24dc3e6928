#include "hangdx/analyze/passes/cascades.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

TEST(CascadesPass, RanksWaitingThroughAStuckRankAreBlockedBehindTheRoot) {
  // Rank 0 waits in pg A for rank 1; rank 1 waits in pg B for rank 2, which
  // is idle: one finding (rank 2 at B seq 2), rank 0 blocked behind it.
  JobBuilder b("nccl");
  b.Steps(0, "A", 1, 2).Steps(1, "A", 1, 2).Steps(1, "B", 1, 1).Steps(2, "B", 1, 1);
  b.Coll(0, "A", 3, "all_reduce", false, {4, 4}, "Float", true)
      .Coll(1, "B", 2, "all_reduce", false, {4, 4}, "Float", true);
  model::Job job = b.Members("A", {0, 1}).Members("B", {1, 2}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  Diagnosis out;
  testing::RunThrough(a, "cascades", &sink, &out);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.pg_name, "B");
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.blocked_behind, Ranks{0});
}

TEST(CascadesPass, RanksWaitingForACycleAreBlockedBehindIt) {
  // 0 and 1 send to each other; 2 waits for 0.
  JobBuilder b;
  b.Wait(0, "send", {1}).Wait(1, "send", {0}).Wait(2, "recv", {0});
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  Diagnosis out;
  testing::RunThrough(a, "cascades", &sink, &out);
  ASSERT_EQ(sink.entries().size(), 1u);
  EXPECT_EQ(sink.entries()[0].component, 0);
  EXPECT_EQ(sink.entries()[0].finding.blocked_behind, Ranks{2});
}

TEST(CascadesPass, HistoryFindingsGetNoCascade) {
  JobBuilder b("nccl");
  b.Steps(0, "B", 1, 1).Steps(1, "B", 1, 1).Coll(1, "B", 2, "all_reduce", false);
  b.Steps(0, "A", 1, 1).Coll(0, "A", 2, "all_reduce", false);
  model::Job job = b.Members("A", {0, 1}).Members("B", {0, 1}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("latent_order", Scope::kHistory);
  Finding f = testing::MakeFinding(Kind::kOrderInversion, {1}, Severity::kWarning);
  f.pg_name = "B";
  f.pg_desc = "undefined";
  f.seq = 2;
  sink.Add(f);
  sink.Begin("missing_rank", Scope::kWaitState);
  sink.Add(f);
  CascadesPass(a, &sink, nullptr);
  // Rank 1 in B seq 2 waits for rank 0, which is in A seq 2 waiting for
  // rank 1: rank 0 is behind B seq 2, for the wait-state finding only.
  EXPECT_TRUE(sink.entries()[0].finding.blocked_behind.empty());
  EXPECT_EQ(sink.entries()[1].finding.blocked_behind, Ranks{0});
}

}  // namespace
}  // namespace hangdx::analyze
