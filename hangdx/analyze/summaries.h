// hangdx/analyze/summaries.h
// The parts of a Diagnosis that describe the job rather than a finding, from
// the rank-level context alone: per pg its members and where it is stuck,
// per rank what it last finished and where it is now, and the rank-level
// wait-for edges (one per waiter and awaited rank; `in_cycle` on the edges of
// a deadlock). Appended after what the device-level engine put there
// (passes/device_meets_rank.h).
#pragma once

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

// Appends out->pgs, out->ranks and out->edges.
void WriteSummaries(const RankAnalysis& a, Diagnosis* out);

}  // namespace hangdx::analyze
