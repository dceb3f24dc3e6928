// hangdx/analyze/checks/pg_creation_order.h
// The pg-creation-order check: a user-given pg description that is a
// different pg name on different ranks, each side pending in its pg
// (checks/stalled_pgs.h): new_group was called in different orders, so each
// side waits in a pg the other side is not using. An order_inversion error;
// the larger side is the reference (a tie goes to the side with the lowest
// rank), the others are culprits; the cycle is the first rank of each side.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void PgCreationOrderCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
