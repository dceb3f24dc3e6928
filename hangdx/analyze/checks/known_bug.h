// hangdx/analyze/checks/known_bug.h
// The known-bug check: when every rank that left a stack is stuck where a
// known bug of the communication library hangs (a signature of
// checks/known_bugs/known_bugs.sigs: the frames in one thread's stack, the
// settings it needs, the library versions it affects), the hang is that bug,
// not a rank's fault: a `resource_deadlock` with no culprit rank, the bug
// named in the fix hint with its affected and fixed releases, its
// workaround and its report.
//
// A rank matches a signature when one of its threads has all the
// signature's frames, no setting the job logged contradicts the signature's
// (NCCL_LAUNCH_MODE=PARALLEL where it needs GROUP), and its library version
// (the rank's own, else the one another rank recorded) is affected or
// unknown; a signature whose frames alone also match healthy waits
// (`version_required`) needs the version known and affected. Of the
// signatures every rank with a stack matches, the one with the most frames
// wins (the ncclCommAbort family shares frames), then the one whose version
// is known, then data order. One rank with a stack that matches none: no
// finding (that rank may be the culprit). Ranks with no stack are not
// counted; the finding says which ranks it is about.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void KnownBugCheck(const RankAnalysis& a, FindingSink* sink);

// True when every rank of `job` with a stack matches one known-bug
// signature (what KnownBugCheck reports), for checks that would otherwise
// describe the same stacks less precisely (checks/stack_sites.h).
bool StacksMatchAKnownBug(const model::Job& job);

}  // namespace hangdx::analyze
