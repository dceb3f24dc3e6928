// The pass table: what reads the checks' findings, in run order (the
// contract of each row is in passes/pass.h).
#include "hangdx/analyze/passes/cascades.h"
#include "hangdx/analyze/passes/causes.h"
#include "hangdx/analyze/passes/device_meets_rank.h"
#include "hangdx/analyze/passes/named_culprit_agreement.h"
#include "hangdx/analyze/passes/order.h"
#include "hangdx/analyze/passes/pass.h"
#include "hangdx/analyze/passes/unexplained_timeout.h"
#include "hangdx/analyze/passes/unnamed_crash.h"
#include "hangdx/analyze/passes/verdict.h"

namespace hangdx::analyze {

namespace {

const Pass kPasses[] = {
    {"named_culprit_agreement", "a producer's named culprit checked against the findings from the records",
     &NamedCulpritAgreementPass},
    {"unnamed_crash", "a crashed_rank for crashed ranks no wait-state finding names", &UnnamedCrashPass},
    {"causes", "a death attached to the mismatch it died of; a stall attached to the crash it waits for", &CausesPass},
    {"unexplained_timeout", "an undecided error for logged timeouts when no wait-state finding is an error",
     &UnexplainedTimeoutPass},
    {"cascades", "blocked_behind: the ranks stuck because of each wait-state finding", &CascadesPass},
    {"device_meets_rank", "device findings replace rank findings about the same culprits", &DeviceMeetsRankPass},
    {"order", "errors first, then by weight (stable)", &OrderPass},
    {"verdict", "hang and the first line of the report", &VerdictPass},
};

}  // namespace

std::span<const Pass> Passes() { return kPasses; }

void RunPasses(const RankAnalysis& a, FindingSink* sink, Diagnosis* out) {
  for (const Pass& p : kPasses) p.run(a, sink, out);
}

}  // namespace hangdx::analyze
