// hangdx/analyze/passes/cascades.h
// Pass 3 (passes/pass.h): ranks whose waits lead, through other stuck ranks,
// to a finding are listed as its `blocked_behind` instead of getting findings
// of their own, so a cascade caused by one stalled rank is one finding. A
// wait-state finding's roots in the rank graph are the nodes of its cyclic
// component (FindingEntry::component) and the instance nodes of its (pg
// name, pg desc, seq); its blocked_behind are the waiters of every node from
// which a root can be reached through at least one edge (a root counts when
// it reaches another root), less the ranks the finding already names.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void CascadesPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
