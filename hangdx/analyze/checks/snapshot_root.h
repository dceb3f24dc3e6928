// hangdx/analyze/checks/snapshot_root.h
// The snapshot-root check: live wait states (wait snapshots) that are not
// deadlocked and wait directly for ranks that wait on nothing (idle: a
// missing_rank) or have no state at all (a crashed_rank from dumps; from
// text-only input a missing_rank unless a log reports the crash). Ranks that
// wait for the same culprits in the same op share one finding. Linear in the
// number of waits (one map lookup per waiting rank; summaries written once).
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void SnapshotRootCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
