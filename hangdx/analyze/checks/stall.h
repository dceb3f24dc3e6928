// hangdx/analyze/checks/stall.h
// The stall check: a pg whose first pending seq every member reached and
// agrees on, yet did not finish (checks/stalled_pgs.h; the ones a
// pg-creation-order split explains excepted). gloo finishes such an op at
// once unless a member it cannot see is missing; for NCCL it is a stall
// inside the collective (network, device). An undecided finding naming the
// (pg, seq) and the least advanced ranks: an error when some op timed out
// (retired unfinished, --assume-timed-out), else a warning. From NCCL logs
// alone (COLL lines are printed at enqueue) nothing is reported without a
// timeout or crash line of a member.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void StallCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
