// hangdx/analyze/passes/named_culprit_agreement.h
// The pass that checks a producer's own verdict (checks/named_culprit.h)
// against the rest of the evidence. When a wait-state finding from the
// records (dumps, per-op log lines, stacks) names the same culprits, the
// producer's lines become evidence of that finding (and a detail says the
// producer agrees), and the producer's finding goes: one hang, one finding.
// When they name different ranks, both stay and each says what the other
// names: the disagreement is the user's to weigh (a desync report from one
// rank's view of the store against the dumps of every rank). A finding from
// the records that names no one (the stall check's undecided: every member
// seen is in it and it does not finish, as when one rank's log is all there
// is) is absorbed into a producer's hang finding that names culprits: that
// says more. Runs first, so that the later passes see one finding per hang.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

// The pass table's named_culprit_agreement row: merges or annotates the
// findings of `sink` in place; `out` is not used.
void NamedCulpritAgreementPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
