// hangdx/analyze/work.h
// A count of the basic steps the analysis takes -- graph nodes and edges
// visited, graph accesses, candidates compared -- so that tests can check that
// the work stays linear in the size of the input without timing anything (as
// LLVM's STATISTIC counts events). Per thread; one add per step.
//
//   ResetWorkSteps();
//   Analyze(job);
//   EXPECT_LE(WorkSteps(), 40 * (ranks + waits));   // analyze/scale_test.cc
//
// Code that loops over the nodes or edges of a wait-for graph counts what it
// visits: the rank graph's accessors count themselves (rank_graph.h), and so
// do WaitGraph's algorithms (wait_graph.h).
#pragma once

#include <cstdint>

namespace hangdx::analyze {

namespace internal {
inline thread_local int64_t work_steps = 0;
}  // namespace internal

// Adds `n` steps to this thread's count.
inline void CountWork(int64_t n = 1) { internal::work_steps += n; }
// This thread's steps since the last reset.
inline int64_t WorkSteps() { return internal::work_steps; }
inline void ResetWorkSteps() { internal::work_steps = 0; }

}  // namespace hangdx::analyze
