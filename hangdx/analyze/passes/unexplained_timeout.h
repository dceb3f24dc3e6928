// hangdx/analyze/passes/unexplained_timeout.h
// Pass 2 (passes/pass.h): when no wait-state finding is an error but some
// rank's log reports a collective timeout (a watchdog timeout line, or an
// exception saying a wait timed out), the data given cannot say who is
// missing, yet it is a hang (or a failure), not a healthy job: an undecided
// error naming the timed-out ranks, the op (from the event or the innermost
// distributed_c10d.py frame) and the ranks with no log. Those are its
// candidates (and culprits) only when they are no more than the ranks that
// timed out; else it names no culprit, and says whose logs would decide.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

// The pass table's unexplained_timeout row: adds at most one finding to
// `sink`; `out` is not used.
void UnexplainedTimeoutPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
