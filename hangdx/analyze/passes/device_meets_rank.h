// hangdx/analyze/passes/device_meets_rank.h
// Pass 4 (passes/pass.h): the one place where the rank-level engine
// (analyze/rank_analysis.h) and the device-level engine
// (analyze/device_graph.h, run by checks/device_level.h) meet.
//
// The Diagnosis gets the wait-state findings, then the history findings, in
// the order the checks and passes 1-3 left them; then each device finding in
// turn: a device-level chain to a cause (an HCCL plog's notify wait, a failed
// task) says what a rank-level finding about the same culprits says, and
// more, so it replaces that finding in its place. It replaces one when both
// are hangs with the same non-empty culprit ranks (global, not pg-local), the
// rank-level one is a missing_rank, crashed_rank or undecided and the device
// one a missing_rank or crashed_rank; otherwise it is appended. (A device
// finding appended earlier can be replaced by a later one the same way.)
// The device engine's edges and rank summaries go first in
// Diagnosis::edges and ranks; the rank-level ones follow (summaries.h).
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void DeviceMeetsRankPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

// True when device finding `device` replaces rank-level finding `rank` (the
// rule above).
bool DeviceReplaces(const Finding& device, const Finding& rank);

}  // namespace hangdx::analyze
