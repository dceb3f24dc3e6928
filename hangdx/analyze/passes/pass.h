// hangdx/analyze/passes/pass.h
// A pass: what must read the findings of the checks (analyze/checks/check.h)
// rather than only the context. The table (passes/table.cc) is short and its
// order matters; each pass says what it reads and writes:
//   1. named_culprit_agreement  reads the named_culprit findings and those from the records;
//                           merges a producer's verdict into the finding that agrees with it,
//                           or makes both say what the other names
//   2. unnamed_crash        reads the wait-state findings' culprits; adds a crashed_rank for
//                           crashed ranks none of them names
//   3. causes               attaches a crash to the mismatch it died of (the cause leads), and
//                           the stall of a pg to the crash of a member (the crash leads)
//   4. unexplained_timeout  reads whether a wait-state finding is an error; adds an undecided
//                           error for logged timeouts none explains
//   5. cascades             writes blocked_behind of the wait-state findings (graph nodes via
//                           FindingEntry::component and the findings' pg and seq)
//   6. device_meets_rank    THE place where the rank-level and device-level engines meet:
//                           device findings replace rank findings about the same culprits;
//                           writes Diagnosis::findings, edges (device ones) and ranks (device ones)
//   7. order                sorts Diagnosis::findings: severity, then weight (stable)
//   8. verdict              writes Diagnosis::hang and verdict from the first finding
// Passes 1-5 see only wait-state findings: history (latent order) and device
// findings are never counted as naming a crash, explaining a timeout or
// rooting a cascade.
#pragma once

#include <span>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/diagnosis.h"
#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

using PassFn = void (*)(const RankAnalysis&, FindingSink*, Diagnosis*);

struct Pass {
  const char* id;    // its file name
  const char* what;  // one line
  PassFn run;
};

// Every pass, in run order.
std::span<const Pass> Passes();

// Runs every pass of Passes() on the checks' findings in `sink`, into `out`.
void RunPasses(const RankAnalysis& a, FindingSink* sink, Diagnosis* out);

}  // namespace hangdx::analyze
