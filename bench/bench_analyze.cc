// bench/bench_analyze.cc: the analysis alone (matching, wait-for graph,
// findings) on a model::Job built in memory, so no parsing is timed.
//   BM_Analyze/<ranks>/<pgs>/<ops per pg>
//     100000/8/4   the 100,000-rank wait-for graph: 8 pgs per rank, the last
//                  4 collectives of each, one missing rank
//     1024/3/667   about 1,024 ranks x 2,000 entries
//     256|512|1024/3/667   linear-scaling series
// Reports seconds per analysis; the Job is built once, outside the timing.
#include <benchmark/benchmark.h>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/checks/latent_order.h"
#include "hangdx/analyze/wait_graph.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::bench {
namespace {

void BM_Analyze(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  const int pgs = static_cast<int>(state.range(1));
  const int ops = static_cast<int>(state.range(2));
  model::Job job = model::testing::TrainingJob(ranks, pgs, ops, /*culprit=*/ranks / 2 + 3);
  size_t findings = 0;
  bool hang = false;
  for (auto _ : state) {
    analyze::Diagnosis d = analyze::Analyze(job);
    findings = d.findings.size();
    hang = d.hang;
    benchmark::DoNotOptimize(d.findings.data());
  }
  size_t total_ops = 0;
  for (const auto& d : job.dumps) total_ops += d.ops.size();
  state.counters["ops"] = static_cast<double>(total_ops);
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["hang"] = hang ? 1 : 0;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(total_ops));
}
BENCHMARK(BM_Analyze)
    ->Args({256, 3, 667})
    ->Args({512, 3, 667})
    ->Args({1024, 3, 667})
    ->Args({100000, 8, 4})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace hangdx::bench

namespace hangdx::bench {
namespace {

// The wait-for graph algorithms alone (graph reduction, strongly connected
// components, witness extraction) at 100,000 ranks x 8 pgs: one node per
// (rank, pg) where the rank is blocked, AND edges to the ranks it waits for.
// Layout: in each pg of 8 consecutive ranks (tensor parallel) rank 0 of the
// group waits for rank 7, which waits for nothing, and ranks 1-6 wait for
// rank 0 (a cascade into a sink);
// in pg 0 every rank waits for rank 12345 (idle: a sink); and ranks
// 50,000-50,999 form one P2P ring (a true cycle), so the result has one
// deadlock to extract and 800,000 nodes to reduce.
void BM_WaitGraphOnly(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  const int pgs = static_cast<int>(state.range(1));
  for (auto _ : state) {
    analyze::WaitGraph g;
    using K = analyze::WaitGraph::NodeKind;
    const int sink = g.AddNode(K::kSink);
    std::vector<int> node(static_cast<size_t>(ranks * pgs));
    for (int64_t i = 0; i < ranks * pgs; ++i) node[i] = g.AddNode(K::kAnd);
    for (int64_t r = 0; r < ranks; ++r) {
      for (int p = 0; p < pgs; ++p) {
        int v = node[r * pgs + p];
        if (p == 0) {
          g.AddEdge(v, r == 12345 ? sink : node[12345 * pgs]);
        } else {
          int64_t base = r - r % 8;
          int64_t target = (r % 8 == 0) ? base + 7 : base;  // rank 7 of the group is the stalled one
          g.AddEdge(v, target >= ranks || r % 8 == 7 ? sink : node[target * pgs + p]);
        }
      }
    }
    // A ring of 1,000 ranks in pg 1 (send/send): r -> r+1 -> ... -> r.
    for (int64_t r = 50000; r < 51000 && r < ranks; ++r)
      g.AddEdge(node[r * pgs + 1], node[(r + 1 < 51000 ? r + 1 : 50000) * pgs + 1]);
    std::vector<bool> dead = g.Deadlocked();
    auto comps = g.CyclicComponents(dead);
    size_t witness = comps.empty() ? 0 : g.WitnessCycle(comps.front()).size();
    benchmark::DoNotOptimize(witness);
    state.counters["nodes"] = static_cast<double>(g.size());
    state.counters["cycles"] = static_cast<double>(comps.size());
  }
}
BENCHMARK(BM_WaitGraphOnly)->Args({100000, 8})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hangdx::bench

namespace hangdx::bench {
namespace {

// The latent order-inversion check alone (analyze/checks/latent_order.h) on the
// jobs of BM_Analyze: every pair of pgs that share ranks, compared over the
// whole recorded window.
void BM_LatentOrder(benchmark::State& state) {
  model::Job job =
      model::testing::TrainingJob(state.range(0), static_cast<int>(state.range(1)), static_cast<int>(state.range(2)),
                                  /*culprit=*/state.range(0) / 2 + 3);
  size_t findings = 0;
  for (auto _ : state) {
    auto f = analyze::LatentOrderInversions(job);
    findings = f.size();
    benchmark::DoNotOptimize(f.data());
  }
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_LatentOrder)
    ->Args({1024, 3, 667})
    ->Args({100000, 8, 4})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace hangdx::bench
