// bench/bench_simulate.cc: `hangdx simulate`'s exploration on the task-queue
// story (failure-modes.md §5, examples/task-queue) scaled up: on each of 2
// ranks, `pairs` pairs of host threads (compute thread: backward, record
// grads_i; comm thread: wait grads_i, all_reduce on pg tp_i), 4 x pairs
// threads in all.
//   BM_Simulate/<pairs>/<mode>/<blocking>/<por>
//     mode 0 off, 1 per_device, 2 per_stream; blocking 1: the all_reduces
//     are host-blocking (per_device then deadlocks: the search stops at the
//     first deadlock); por 0: every enabled transition branches.
// Counters: states (distinct states visited), states_per_s, deadlock, bound
// (1 when max_states = 5,000,000 cut the search).
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "hangdx/analyze/device_graph.h"
#include "hangdx/model/testing/device_job_builder.h"
#include "hangdx/sim/simulator.h"

namespace hangdx::bench {
namespace {

model::DeviceJob TaskQueueJob(int pairs, model::QueueMode mode, bool blocking) {
  model::testing::DeviceJobBuilder b(mode);
  for (int p = 0; p < pairs; ++p) b.Pg("tp" + std::to_string(p), {0, 1});
  for (model::Rank r : {0, 1}) {
    for (int p = 0; p < pairs; ++p) {
      std::string i = std::to_string(p), e = "grads" + i + "_" + std::to_string(r);
      b.Compute(r, "compute" + i, "compute" + i, "backward");
      b.Record(r, "compute" + i, "compute" + i, e);
      b.Wait(r, "comm" + i, "comm" + i, e);
      b.Collective(r, "comm" + i, "comm" + i, "tp" + i).host_blocking = blocking;
    }
  }
  return b.Build();
}

void BM_Simulate(benchmark::State& state) {
  const int pairs = static_cast<int>(state.range(0));
  const auto mode = static_cast<model::QueueMode>(state.range(1));
  model::DeviceJob job = TaskQueueJob(pairs, mode, state.range(2) != 0);
  sim::ExploreOptions o;
  o.partial_order_reduction = state.range(3) != 0;
  o.max_states = 5'000'000;
  o.max_seconds = 600;
  sim::ExploreResult r;
  for (auto _ : state) {
    auto res = sim::Explore(job, o);
    if (!res.ok()) {
      state.SkipWithError(res.status().message().c_str());
      return;
    }
    r = std::move(*res);
  }
  state.counters["states"] = static_cast<double>(r.states);
  state.counters["states_per_s"] = r.seconds > 0 ? r.states / r.seconds : 0;
  state.counters["deadlock"] = r.deadlock;
  state.counters["bound"] = r.bound_reached;
}
BENCHMARK(BM_Simulate)
    // Exhaustive, passing: off and per_stream, with and without reduction.
    ->Args({1, 0, 1, 1})
    ->Args({1, 0, 1, 0})
    ->Args({2, 0, 1, 1})
    ->Args({2, 0, 1, 0})
    ->Args({2, 2, 1, 1})
    ->Args({2, 2, 1, 0})
    ->Args({4, 2, 1, 1})
    ->Args({4, 2, 1, 0})
    ->Args({8, 2, 1, 1})
    // per_device without host-blocking ops: passes, every queue order explored.
    ->Args({2, 1, 0, 1})
    ->Args({2, 1, 0, 0})
    ->Args({3, 1, 0, 1})
    // per_device with host-blocking all_reduces: the first deadlock.
    ->Args({4, 1, 1, 1})
    ->Args({4, 1, 1, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace hangdx::bench

namespace hangdx::bench {
namespace {

// The device-level wait-for graph (analyze/device_graph.h) on a snapshot of
// `ranks` ranks: per rank a started all_reduce on its tensor-parallel pg
// (blocks of 8) on stream comm, then a record; a compute stream waiting for
// that record; rank 12345 never issues its all_reduce (missing), and ranks
// 50,000-50,999 are a send/send ring on stream p2p (one true cycle).
// About 3 ops per rank.
model::DeviceJob StuckSnapshot(int64_t ranks) {
  using Kd = model::DevOp::Kind;
  model::testing::DeviceJobBuilder b;
  std::map<std::string, std::vector<model::Rank>> pgs;
  for (int64_t r = 0; r < ranks; ++r) {
    const std::string tp = "tp" + std::to_string(r / 8), event = "reduced" + std::to_string(r);
    pgs[tp].push_back(r);
    std::vector<model::OpId> comm;
    if (r != 12345) comm.push_back(b.Op(r, Kd::kCollective, "comm", tp));
    comm.push_back(b.Op(r, Kd::kRecord, "comm", event));
    model::OpId wait = b.Op(r, Kd::kWait, "compute", event);
    b.Stream(r, "comm", comm, true).Stream(r, "compute", {wait}, true);
    if (r >= 50000 && r < 51000) {
      model::OpId send = b.Op(r, Kd::kSend, "p2p", "pp", r + 1 < 51000 ? r + 1 : 50000);
      model::OpId recv = b.Op(r, Kd::kRecv, "p2p", "pp", r > 50000 ? r - 1 : 50999);
      b.Stream(r, "p2p", {send, recv}, true);
      pgs["pp"].push_back(r);
    }
  }
  for (auto& [name, members] : pgs) b.Pg(name, std::move(members));
  return b.Build();
}

void BM_DeviceGraph(benchmark::State& state) {
  model::DeviceJob job = StuckSnapshot(state.range(0));
  size_t findings = 0, dead = 0;
  for (auto _ : state) {
    analyze::DeviceAnalysis a = analyze::AnalyzeDevice(job);
    findings = a.findings.size();
    dead = a.deadlocked.size();
    benchmark::DoNotOptimize(a.findings.data());
  }
  state.counters["ops"] = static_cast<double>(job.ops.size());
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["deadlocked_ops"] = static_cast<double>(dead);
}
BENCHMARK(BM_DeviceGraph)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace hangdx::bench
