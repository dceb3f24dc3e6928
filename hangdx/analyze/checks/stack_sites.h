// hangdx/analyze/checks/stack_sites.h
// The stack-sites check, for ranks known only from stack dumps (py-spy, gdb,
// faulthandler; dumps with no recorded ops): each rank's outermost
// collective frame and its caller outside torch.distributed form a call site,
// and ranks are grouped by call site, as STAT does. Two or more sites: a
// collective_mismatch naming every side but the largest (a tie: the side
// without the lowest rank is the reference); one site and ranks in no
// collective: a missing_rank naming those. (Merging stacks into a tree for
// `hangdx stacks` is analyze/stacks.h.)
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void StackSitesCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
