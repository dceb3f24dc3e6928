// hangdx/analyze/checks/collective_mismatch.h
// The mismatch check: a root (pg, seq) (RankAnalysis::IsRoot) whose arrived
// ranks recorded different signatures (analyze/instances.h). Every class
// other than the reference (the majority; ties by the pg's history, then the
// side without the lowest rank) is a culprit. Different op names (or a
// different number of ops in a coalesced group) make a collective_mismatch,
// else a size_mismatch (sizes or dtypes); all_to_all sizes may differ by rank,
// so a size difference there is an undecided warning. A mismatch that
// TORCH_DISTRIBUTED_DEBUG=DETAIL raised (kMismatch log events at this pg and
// seq) is an error with hang false: the job failed fast.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void CollectiveMismatchCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
