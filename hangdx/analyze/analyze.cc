// The rank-level analysis, start to end: the context, the check table, the
// pass table, the summaries. What each step decides is in its own file
// (analyze/rank_analysis.h lists the context steps, checks/check.h the
// checks, passes/pass.h the passes).
#include "hangdx/analyze/analyze.h"

#include <algorithm>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/passes/pass.h"
#include "hangdx/analyze/rank_analysis.h"
#include "hangdx/analyze/summaries.h"

namespace hangdx::analyze {

Diagnosis Analyze(const model::Job& job, const AnalyzeOptions& options) {
  const RankAnalysis a = BuildRankAnalysis(job, options);
  FindingSink sink;
  RunChecks(a, &sink);
  Diagnosis out;
  out.files = job.files;
  out.diagnostics = job.diagnostics;
  out.diagnostics.insert(out.diagnostics.end(), a.diagnostics.begin(), a.diagnostics.end());
  out.inputs = job.inputs;
  out.unreadable = job.unreadable;
  out.world_size = a.world.reported_size;
  out.world_size_inferred = a.world.inferred;
  out.ranks_without_dump = a.world.without_dump;
  RunPasses(a, &sink, &out);
  WriteSummaries(a, &out);
  // An unknown world (rank numbers too high to believe, nothing giving the
  // size) lists no rank without data, but its size must still exceed every
  // rank the report names: the number of dumps (2 for ranks 0 and 16777215)
  // made the JSON list ranks past its own world_size.
  if (a.world.size < 0) out.world_size = std::max(out.world_size, HighestRankListed(out) + 1);
  return out;
}

}  // namespace hangdx::analyze
