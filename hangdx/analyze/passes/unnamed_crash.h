// hangdx/analyze/passes/unnamed_crash.h
// Pass 1 (passes/pass.h): a rank whose log reports a crash that no wait-state
// finding names as a culprit (nobody was seen waiting for it: vllm#6042 left
// only the dying rank's log) is still the first thing to look at: one
// crashed_rank finding (checks/crashed_rank.h's builder) for all of them,
// added after the checks' wait-state findings. A rank that aborted on a
// mismatch it reports itself (checks/reported_mismatch.h: gloo's
// EnforceNotMet on a receiver given more bytes than it posted) is that
// finding's victim, not an unnamed crash.
#pragma once

#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {

void UnnamedCrashPass(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
