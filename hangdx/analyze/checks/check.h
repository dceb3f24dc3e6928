// hangdx/analyze/checks/check.h
// A check: one function of the read-only rank-level context
// (analyze/rank_analysis.h) that adds findings to a FindingSink. Checks never
// read each other's findings: what one needs from another's reasoning it gets
// from the context (or from a helper both call); whatever must read earlier
// findings is a pass (analyze/passes/pass.h). The table (kChecks, table.cc)
// lists every check in run order, after NCCL's rasDiagnosticsChecks[].
//
// Adding a check: write checks/<id>.{h,cc,_test.cc} (the .h declares
// `void <Name>Check(const RankAnalysis&, FindingSink*)` and says what it
// finds), add one row to kChecks in table.cc, and the two file names to
// analyze/CMakeLists.txt; docs/analysis.md says what it decides.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

// Which findings the passes read or change, set per check in the table.
enum class Scope : uint8_t {
  // About the rank-level wait state (the hang now): the passes name the
  // crashes and timeouts these findings leave unexplained and attach
  // blocked_behind (cascades) to them.
  kWaitState,
  // About the recorded history, not the hang (latent order): only sorted.
  kHistory,
  // The device-level engine's (analyze/device_graph.h): they meet the
  // rank-level findings in one pass only, passes/device_meets_rank.h.
  kDevice,
};

// A finding with what the passes need to know about where it came from.
struct FindingEntry {
  Finding finding;
  Scope scope = Scope::kWaitState;
  const char* check = "";  // id of the check or pass that made it
  int component = -1;      // a cycle finding: its index in RankGraph::components()
};

// Collects the findings of the checks, in the order they are added, then the
// passes work on them. Not thread-safe.
class FindingSink {
 public:
  // Called by the runner before each check: the findings it adds get this
  // check id and scope.
  void Begin(const char* check, Scope scope) {
    check_ = check;
    scope_ = scope;
  }
  // Adds a finding of the running check; `component` for a finding that
  // reports cyclic component `component` of the rank graph.
  void Add(Finding f, int component = -1) { entries_.push_back({std::move(f), scope_, check_, component}); }

  std::vector<FindingEntry>& entries() { return entries_; }
  const std::vector<FindingEntry>& entries() const { return entries_; }

  // The device-level engine's rank-level edges (witness cycles) and the
  // summaries of device ranks that have no rank-level record, in the order
  // its check produced them; passes/device_meets_rank.h puts them in the
  // Diagnosis ahead of the rank-level ones.
  std::vector<RankEdge> device_edges;
  std::vector<RankSummary> device_ranks;

 private:
  std::vector<FindingEntry> entries_;
  const char* check_ = "";
  Scope scope_ = Scope::kWaitState;
};

using CheckFn = void (*)(const RankAnalysis&, FindingSink*);

// One row of the check table.
struct Check {
  const char* id;    // stable name: the check's file name
  const char* what;  // one line: what it finds
  Scope scope;
  CheckFn run;
};

// Every check, in run order (their findings keep this order until the
// order pass sorts them by severity and weight, stably).
std::span<const Check> Checks();

// Runs every check of Checks() on `a` into `sink`.
void RunChecks(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
