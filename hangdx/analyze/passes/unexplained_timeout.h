// hangdx/analyze/passes/unexplained_timeout.h
// Pass 2 (passes/pass.h): when no wait-state finding is an error but some
// rank's log reports a collective timeout (a watchdog timeout line, or an
// exception saying a wait timed out), the data given cannot say who is
// missing, yet it is a hang (or a failure), not a healthy job: an undecided
// error naming the timed-out ranks, the op (from the event or the innermost
// distributed_c10d.py frame) and the ranks with no log.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void UnexplainedTimeoutPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
