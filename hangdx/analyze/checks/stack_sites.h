// hangdx/analyze/checks/stack_sites.h
// The stack-sites check, for ranks known only from stack dumps (py-spy, gdb,
// faulthandler; dumps with no recorded ops): each rank's outermost
// collective frame and its caller outside torch.distributed form a call site,
// and ranks are grouped by call site, as STAT does. Two or more sites, every
// rank in a collective: a
// collective_mismatch naming every side but the largest (a tie: the side
// without the lowest rank is the reference, unless ranks of the job left no
// stack: then an undecided naming both sides, since those ranks decide); one
// site, or two or more, and ranks in no collective: a missing_rank naming
// those (stacks carry no pg: two sites may be two pgs); every rank in
// send or recv (P2P, which gloo's Flight Recorder never records): a
// p2p_mismatch, or a p2p_cycle in a known 2-rank world; no rank in a
// collective and every rank's thread active in the same innermost call
// (cuModuleLoadData, a spinning kernel's launch): a resource_deadlock with no
// culprit, the hang inside that call, unless the stacks match a known
// library bug (checks/known_bug.h names it). (Merging stacks into a tree for
// `hangdx stacks` is analyze/stacks.h.)
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void StackSitesCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
