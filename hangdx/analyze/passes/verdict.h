// hangdx/analyze/passes/verdict.h
// Pass 6 (passes/pass.h): Diagnosis::hang (some finding is an error) and the
// verdict, the first line of the report: the first finding's summary with
// "HANG", "HANG (mismatch)", "ERROR (mismatch, raised; no hang)" or
// "WARNING" and whom to look at first; without findings, why there is
// nothing to say (no usable input, a device snapshot read only in part, pgs
// still in progress, ranks without a dump, gloo's unrecorded P2P ops; with no
// rank's records, what the messages read in the files show: "No hang found"
// when they claim no hang, else "No usable input" naming the message that
// could not be placed on a rank).
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void VerdictPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
