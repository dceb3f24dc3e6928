// hangdx/analyze/passes/order.h
// Pass 5 (passes/pass.h): findings most important first: errors before
// warnings before infos, then by weight (ranks blocked behind it + ranks that
// arrived and wait + ranks in its cycle), larger first. Stable: ties keep
// the order of the check table.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void OrderPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

// The weight above.
size_t FindingWeight(const Finding& f);

}  // namespace hangdx::analyze
