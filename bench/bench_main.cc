// bench/bench_main.cc: Google Benchmark entry point for hangdx_bench.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
