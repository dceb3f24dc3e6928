// The rank-level analysis does work linear in the size of the job: counted
// in steps (analyze/work.h), never timed, on shapes that once made it
// quadratic (issue 14: a wait snapshot whose ranks wait in one ring took 23 s
// at 10,000 ranks). Each shape is analyzed at n and 8n ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/work.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;

// A job and its size: ranks + wait edges + recorded ops.
struct Shape {
  model::Job job;
  int64_t size = 0;
};

// Every rank waits in a ring: rank i for rank i+1 (one cycle of n).
Shape Ring(int n) {
  JobBuilder b;
  for (int i = 0; i < n; ++i) b.Wait(i, "all_reduce", {(i + 1) % n}, 7);
  return {b.Build(), 2 * static_cast<int64_t>(n)};
}

// Rank i waits for up to 3 ranks drawn by a fixed LCG (random graph).
Shape Random(int n) {
  JobBuilder b;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, static_cast<int>(x >> 33); };
  int64_t edges = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<model::Rank> w;
    for (int k = next() % 4; k > 0; --k) w.push_back(next() % n);
    edges += static_cast<int64_t>(w.size());
    if (!w.empty())
      b.Wait(i, next() % 2 ? "send" : "all_reduce", w);
    else
      b.Wait(i, "compute", {});
  }
  return {b.Build(), n + edges};
}

// Pairs of ranks that wait for each other: n/2 small deadlocks.
Shape Pairs(int n) {
  JobBuilder b;
  for (int i = 0; i + 1 < n; i += 2) b.Wait(i, "send", {i + 1}).Wait(i + 1, "send", {i});
  return {b.Build(), 2 * static_cast<int64_t>(n)};
}

// Rank 0 waits for every other rank, each waiting for nobody; and n ranks
// waiting for one idle rank.
Shape Star(int n) {
  JobBuilder b;
  std::vector<model::Rank> all;
  for (int i = 1; i < n; ++i) all.push_back(i), b.Wait(i, "compute", {});
  b.Wait(0, "all_reduce", all);
  for (int i = n; i < 2 * n; ++i) b.Wait(i, "barrier", {1});
  return {b.Build(), 4 * static_cast<int64_t>(n)};
}

// A chain of pgs: rank i waits in pg i (ranks i, i+1) for rank i+1, which
// waits in pg i+1; the last rank is idle: one root, n-1 ranks behind it.
Shape Chain(int n) {
  JobBuilder b("nccl");
  for (int i = 0; i < n; ++i) {
    std::string pg = "c" + std::to_string(i);
    b.Steps(i, pg, 1, 1);
    if (i + 1 < n) b.Steps(i + 1, pg, 1, 1).Coll(i, pg, 2, "all_reduce", false, {4}, "Float", true);
  }
  model::Job job = b.Build();
  // Each dump records the members of its own two pgs.
  for (auto& d : job.dumps)
    for (model::Rank i : {d.rank - 1, d.rank}) {
      if (i < 0 || i + 1 >= n) continue;
      std::string pg = "c" + std::to_string(i);
      d.pg_config[pg] = {pg, "chain", std::vector<model::Rank>{i, i + 1}, true};
    }
  return {std::move(job), 4 * static_cast<int64_t>(n)};
}

int64_t StepsOf(const Shape& s) {
  ResetWorkSteps();
  Diagnosis d = Analyze(s.job);
  EXPECT_FALSE(d.findings.empty());
  return WorkSteps();
}

// Each rank and each wait is built into the graph, reduced, searched for
// components and witnesses, walked by the cascade pass (a node at most
// twice) and summarized: about 16 counted steps per unit of size in these
// shapes. The bound leaves room for small changes; quadratic work is over it
// by far (the cascade pass that searched once per root node took 510,501
// steps for the 500-rank ring and 32,084,001 for 4,000). And 8 times the
// ranks must cost at most 10 times the steps.
constexpr int64_t kStepsPerUnit = 24;

void ExpectLinear(const std::function<Shape(int)>& make) {
  Shape small = make(500), large = make(4000);
  int64_t a = StepsOf(small), b = StepsOf(large);
  EXPECT_LE(a, kStepsPerUnit * small.size);
  EXPECT_LE(b, kStepsPerUnit * large.size);
  EXPECT_LE(b, 10 * a) << a << " steps for size " << small.size << ", " << b << " for " << large.size;
}

TEST(AnalyzeScale, RingOfWaitsIsLinear) { ExpectLinear(Ring); }
TEST(AnalyzeScale, RandomWaitsAreLinear) { ExpectLinear(Random); }
TEST(AnalyzeScale, ManySmallDeadlocksAreLinear) { ExpectLinear(Pairs); }
TEST(AnalyzeScale, OneRankWaitingForAllIsLinear) { ExpectLinear(Star); }
TEST(AnalyzeScale, ACascadeThroughManyPgsIsLinear) { ExpectLinear(Chain); }

}  // namespace
}  // namespace hangdx::analyze
