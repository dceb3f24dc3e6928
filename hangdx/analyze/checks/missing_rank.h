// hangdx/analyze/checks/missing_rank.h
// The missing-rank check: a root (pg, seq) that some members never reached
// while not blocked in anything recorded (busy elsewhere), or that members
// with no dump never reached (checks/absent_ranks.h, cause kAbsent). By what
// the evidence shows:
//   - straggler (warning, hang false): the arrived ranks' ops are all still in
//     flight and none has timed out (gloo: pending and not retired);
//   - missing_rank: the absent ranks are alive and elsewhere; with text logs
//     only, a rank with no line in the per-rank logs given is named so
//     ("no line in the logs given"), and silent ranks are absent, not dead;
//   - crashed_rank: ranks with no dump, at most half the members;
//   - undecided (warning): most members have no dump.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void MissingRankCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
