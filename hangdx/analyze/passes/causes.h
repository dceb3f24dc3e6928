// hangdx/analyze/passes/causes.h
// The pass that puts causes before their consequences, so that fusing more
// evidence never makes a verdict worse than one kind of artifact gives:
//   - a rank that crashed because of a mismatch the records show (gloo
//     aborts a rank whose received size does not match: it is on a side of
//     the mismatch, or has no op there) is attached to the mismatch
//     finding (a "crashed" role, its crash lines as evidence): the mismatch
//     is the cause, the death its consequence;
//   - a pg that every recorded member is in and that did not finish (the
//     stall check's undecided) while a rank that may be a member of it
//     crashed is that crash's consequence: the crashed_rank finding leads,
//     the stalled ranks are listed as waiting for it.
// Reads and changes wait-state findings only; runs after unnamed_crash
// (which names every crash) and before unexplained_timeout.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

// The pass table's causes row: changes the wait-state findings of `sink` in
// place (attaches, then drops the attached ones); `out` is not used.
void CausesPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
