// hangdx/analyze/checks/snapshot_root.h
// The snapshot-root check: live wait states (wait snapshots) that are not
// deadlocked and wait directly for ranks that wait on nothing (idle: a
// missing_rank) or have no state at all (a crashed_rank from dumps; from
// text-only input a missing_rank unless a log reports the crash). Ranks in
// the same wait (op, AND or OR) on culprits of the same
// classes (idle in one op, no data, crashed) share one finding, whichever
// culprits of those classes each waits on, so a 100,000-rank snapshot is a
// few findings, not one per awaited rank; its culprits are the ranks the
// chains end at, least progressed (lowest op_seq) first. Evidence and
// whereabouts are listed for the first 16 waiters and culprits, then counted.
// A point-in-time wait is not a hang by itself: a wait for a rank that is
// busy elsewhere is a hang only when a waiter's waited_ms reaches its
// stall_after_ms (default 30 s) or with assume_timed_out; otherwise it is
// "waiting, not deadlocked", a straggler finding of severity info (exit 0).
// O(W log W) in the number of waits (one map lookup per waiting rank).
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void SnapshotRootCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
