// hangdx/analyze/checks/check_testing.h
// For tests of one check or pass: run it alone (or the table up to it) on a
// job built in a few lines (model/testing/job_builder.h). Test-only; no
// library code includes it.
//
//   model::Job job = model::testing::JobBuilder().Steps(0, "0", 1, 2).Build();
//   std::vector<Finding> fs = testing::RunCheck(&MissingRankCheck, job);
#pragma once

#include <string>
#include <vector>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze::testing {

// The findings check `check` adds for `job` (which must outlive the call),
// in the order it adds them.
inline std::vector<Finding> RunCheck(CheckFn check, const model::Job& job, const AnalyzeOptions& options = {}) {
  RankAnalysis a = BuildRankAnalysis(job, options);
  FindingSink sink;
  sink.Begin("test", Scope::kWaitState);
  check(a, &sink);
  std::vector<Finding> out;
  for (auto& e : sink.entries()) out.push_back(std::move(e.finding));
  return out;
}

// Runs every check, then the passes of the table up to and including the
// one with id `last`, on `a` into `sink` and `out`.
inline void RunThrough(const RankAnalysis& a, const std::string& last, FindingSink* sink, Diagnosis* out) {
  RunChecks(a, sink);
  for (const Pass& p : Passes()) {
    p.run(a, sink, out);
    if (p.id == last) return;
  }
}

// A finding of `kind` with these culprits, for tests of passes.
inline Finding MakeFinding(Kind kind, std::vector<model::Rank> culprits, Severity severity = Severity::kError) {
  Finding f;
  f.kind = kind;
  f.culprit_ranks = std::move(culprits);
  f.severity = severity;
  f.hang = severity == Severity::kError;
  return f;
}

}  // namespace hangdx::analyze::testing
