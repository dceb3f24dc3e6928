// hangdx/analyze/checks/reported_mismatch.h
// The reported-mismatch check, from logs alone: a rank's log says that the
// ranks of a collective disagree (model::LogEvent::Kind::kMismatch: gloo's
// "Received data size doesn't match expected size", NCCL's "message
// truncated" and "collective mismatch error", TORCH_DISTRIBUTED_DEBUG=DETAIL
// fingerprints, Horovod's "Mismatched ..." errors, NCCL RAS MISMATCH) while
// no record shows the two sides (no instance of analyze/instances.h is a
// mismatch: then checks/collective_mismatch.h reports it with the records).
//
// The rank that prints it is the one that noticed, usually an innocent
// receiver: it is never the culprit. The culprit is the ranks the message
// itself names (global ranks; NCCL's "at and around rank N"), else nobody.
// A message that compares its rank with another (DETAIL's "Rank 1 is running
// collective X, but Rank 7 is running collective Y": LogEvent::peer) makes
// both ranks the candidates; otherwise the other ranks with data are, and
// the finding says which evidence would name the one that differs. A receiver that aborted on it
// (gloo's EnforceNotMet) crashed because of the mismatch: its crash is part
// of this finding (passes/unnamed_crash.h does not report it again).
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

// The table's reported_mismatch row: at most one finding, size_mismatch when
// every message is about sizes, dtypes or shapes, collective_mismatch
// otherwise. Never fails.
void ReportedMismatchCheck(const RankAnalysis& a, FindingSink* sink);

// True when a log of rank `r` reports a mismatch between ranks (a kMismatch
// event): a crash of `r` is then how the mismatch showed, not its cause.
bool ReportedAMismatch(const model::Job& job, model::Rank r);

}  // namespace hangdx::analyze
