#include "hangdx/analyze/checks/latent_order.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/analyze.h"

namespace hangdx::analyze {
namespace {

// Appends collectives to rank r in the order given: {pg name, seq}.
void Issue(model::Job* job, model::Rank r, std::vector<std::pair<std::string, int64_t>> ops,
           const std::string& backend = "nccl") {
  model::RankDump* d = nullptr;
  for (auto& x : job->dumps)
    if (x.rank == r) d = &x;
  if (!d) {
    job->dumps.emplace_back();
    d = &job->dumps.back();
    d->rank = r;
    d->file = "trace_" + std::to_string(r);
    d->from_flight_recorder = true;
  }
  for (const auto& [pg, seq] : ops) {
    model::OpRecord o;
    o.record_id = static_cast<int64_t>(d->ops.size()) + 100;
    o.pg_name = d->interner->Str(pg);
    o.collective_seq = seq;
    o.profiling_name = d->interner->Str(backend + ":all_reduce");
    model::ParseProfilingName(&o);
    o.completed = true;
    d->ops.push_back(o);
  }
}

TEST(LatentOrderTest, ConsistentOrderIsSilent) {
  model::Job job;
  for (model::Rank r = 0; r < 3; ++r) Issue(&job, r, {{"A", 0}, {"B", 0}, {"A", 1}, {"B", 1}});
  EXPECT_TRUE(LatentOrderInversions(job).empty());
}

TEST(LatentOrderTest, InvertedPairIsNamedWithRanksSeqsAndRecords) {
  // Ranks 0,1: A0 B0 A1 B1. Rank 2: A0 B0 B1 A1. The first A collective whose
  // position against B differs is A seq 1: ranks 0-1 issue it before B seq 1,
  // rank 2 after.
  model::Job job;
  Issue(&job, 0, {{"A", 0}, {"B", 0}, {"A", 1}, {"B", 1}});
  Issue(&job, 1, {{"A", 0}, {"B", 0}, {"A", 1}, {"B", 1}});
  Issue(&job, 2, {{"A", 0}, {"B", 0}, {"B", 1}, {"A", 1}});
  auto fs = LatentOrderInversions(job);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kOrderInversion);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.hang);
  EXPECT_EQ(f.pg_name, "A");
  EXPECT_EQ(f.seq, 1);
  EXPECT_EQ(f.culprit_ranks, (std::vector<model::Rank>{2}));
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (std::vector<model::Rank>{0, 1}));
  ASSERT_EQ(f.details.size(), 3u);
  EXPECT_EQ(f.details[0], "ranks 0-1: pg A seq 1 all_reduce, then pg B seq 1 all_reduce");
  EXPECT_EQ(f.details[1], "rank 2: pg B seq 1 all_reduce, then pg A seq 1 all_reduce");
  // Records: rank 0 issued A1 (record 102) then B1 (103); rank 2 issued B1 (102) then A1 (103).
  ASSERT_EQ(f.evidence.size(), 4u);
  EXPECT_EQ(f.evidence[0].rank, 0);
  EXPECT_EQ(f.evidence[0].record_id, 102);
  EXPECT_EQ(f.evidence[1].record_id, 103);
  EXPECT_EQ(f.evidence[2].rank, 2);
  EXPECT_EQ(f.evidence[2].record_id, 102);
  EXPECT_EQ(f.evidence[3].record_id, 103);
}

TEST(LatentOrderTest, OnlyTheWindowEveryRankRecordedIsCompared) {
  // Rank 1's ring buffer dropped A0 and B0, where rank 0's order differs from
  // rank 1's history... which rank 1 no longer has: nothing to compare there.
  // From A1 on both agree.
  model::Job job;
  Issue(&job, 0, {{"B", 0}, {"A", 0}, {"A", 1}, {"B", 1}});
  Issue(&job, 1, {{"A", 1}, {"B", 1}});
  EXPECT_TRUE(LatentOrderInversions(job).empty());
  // ... but a difference inside the window is found.
  model::Job job2;
  Issue(&job2, 0, {{"B", 0}, {"A", 0}, {"A", 1}, {"B", 1}});
  Issue(&job2, 1, {{"B", 1}, {"A", 1}});
  auto fs = LatentOrderInversions(job2);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].seq, 1);
}

TEST(LatentOrderTest, DifferentBackendsAreNotCompared) {
  // A gloo pg on the CPU and an NCCL pg on the device share no serial resource.
  model::Job job;
  Issue(&job, 0, {{"A", 0}});
  Issue(&job, 0, {{"B", 0}}, "gloo");
  Issue(&job, 1, {{"B", 0}}, "gloo");
  Issue(&job, 1, {{"A", 0}});
  EXPECT_TRUE(LatentOrderInversions(job).empty());
}

TEST(LatentOrderTest, TieGoesToTheClassWithTheLowestRankAndFindingsAreCapped) {
  model::Job job;
  // Two pairs inverted: (A, B) and (A, C), ranks 0 vs 1.
  Issue(&job, 0, {{"A", 0}, {"B", 0}, {"C", 0}});
  Issue(&job, 1, {{"B", 0}, {"C", 0}, {"A", 0}});
  auto fs = LatentOrderInversions(job);
  ASSERT_EQ(fs.size(), 2u);  // (A, B) and (A, C); B and C agree
  EXPECT_EQ(fs[0].culprit_ranks, (std::vector<model::Rank>{1}));
  auto capped = LatentOrderInversions(job, 1);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_EQ(capped[0].details.back(), "1 more pairs of pgs are issued in inconsistent orders");
}

TEST(LatentOrderTest, LongRegularOrdersAreClassedExactly) {
  // Orders are kept as deltas in a PeriodicLog while ranks are classed: a
  // long regular loop is one period, and a rank that differs from it once,
  // late (one step swapped at i = 4500 of 5000), or only at its very end
  // (the last step swapped) is still a class of its own, named at that seq.
  auto loop = [](int64_t swap_at, int64_t n) {
    std::vector<std::pair<std::string, int64_t>> ops;
    for (int64_t i = 0; i < n; ++i) {
      if (i == swap_at) {
        ops.push_back({"B", i});
        ops.push_back({"A", i});
      } else {
        ops.push_back({"A", i});
        ops.push_back({"B", i});
      }
    }
    return ops;
  };
  for (int64_t swap_at : {int64_t{4500}, int64_t{4999}}) {
    model::Job job;
    Issue(&job, 0, loop(-1, 5000));
    Issue(&job, 1, loop(swap_at, 5000));
    Issue(&job, 2, loop(-1, 5000));
    Issue(&job, 3, loop(swap_at, 5000));
    Issue(&job, 4, loop(-1, 5000));
    auto fs = LatentOrderInversions(job);
    ASSERT_EQ(fs.size(), 1u) << swap_at;
    EXPECT_EQ(fs[0].seq, swap_at);
    EXPECT_EQ(fs[0].culprit_ranks, (std::vector<model::Rank>{1, 3}));
    ASSERT_EQ(fs[0].roles.size(), 2u);
    EXPECT_EQ(fs[0].roles[0].ranks, (std::vector<model::Rank>{0, 2, 4}));
  }
  // The same long loop on every rank: one class, nothing found.
  model::Job same;
  for (model::Rank r = 0; r < 4; ++r) Issue(&same, r, loop(-1, 5000));
  EXPECT_TRUE(LatentOrderInversions(same).empty());
}

TEST(LatentOrderTest, AnalyzeReportsItAsAWarningNotAHang) {
  model::Job job;
  Issue(&job, 0, {{"A", 0}, {"B", 0}});
  Issue(&job, 1, {{"B", 0}, {"A", 0}});
  Diagnosis d = Analyze(job);
  EXPECT_FALSE(d.hang);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Kind::kOrderInversion);
  EXPECT_EQ(d.verdict.rfind("WARNING: latent deadlock", 0), 0u) << d.verdict;
}

}  // namespace
}  // namespace hangdx::analyze
