// bench/bench_analyze.cc: the analysis alone (matching, wait-for graph,
// findings) on a model::Job built in memory, so no parsing is timed.
//   BM_Analyze/<ranks>/<pgs>/<ops per pg>
//     100000/8/4   the 100,000-rank wait-for graph: 8 pgs per rank, the last
//                  4 collectives of each, one missing rank
//     1024/3/667   about 1,024 ranks x 2,000 entries
//     256|512|1024/3/667   linear-scaling series
// Reports seconds per analysis; the Job is built once, outside the timing.
#include <benchmark/benchmark.h>

#include "bench_job.h"
#include "hangdx/analyze/analyze.h"

namespace hangdx::bench {
namespace {

void BM_Analyze(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  const int pgs = static_cast<int>(state.range(1));
  const int ops = static_cast<int>(state.range(2));
  model::Job job = MakeJob(ranks, pgs, ops, /*culprit=*/ranks / 2 + 3);
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
