// hangdx/sim/simulate.h
// `hangdx simulate`: load a schedule, explore it, explain a deadlock with
// the device wait-for graph (analyze/device_graph.h), search for fixes, and
// render the result as text or JSON.
//
//   auto job = sim::LoadSchedule("examples/task-queue/deadlock.json");
//   if (!job.ok()) ...                       // exit 2
//   auto rep = sim::Simulate(*job, {});
//   if (rep.ok()) fputs(sim::RenderText(*rep).c_str(), stdout), exit(sim::ExitCode(*rep));
#pragma once

#include <string>
#include <vector>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/base/status.h"
#include "hangdx/model/device.h"
#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/sim/fixes.h"
#include "hangdx/sim/simulator.h"

namespace hangdx::sim {

struct SimulateOptions {
  ExploreOptions explore;
  bool search_fixes = true;  // after a deadlock, simulate the candidate fixes (fixes.h)
};

struct SimulateReport {
  model::DeviceJob job;   // the input
  bool reduction = true;  // partial-order reduction was on
  ExploreResult result;
  std::vector<analyze::Finding> findings;  // the device wait-for graph of the stuck state (deadlock only)
  std::vector<FixTrial> fixes;             // every candidate tried, passing or not
  bool fixes_searched = false;
  int fixes_untried = 0;     // candidates left untried: the time bound ran out
  double max_seconds = 300;  // options.explore.max_seconds
};

// Reads the schedule (or snapshot) file at `path` (docs/snapshot-format.md).
// Errors: the file cannot be read (NotFound, Io), or it is not a schedule,
// or the reader had to skip or reinterpret any part of it (InvalidArgument,
// the message lists the problems with their JSON paths, each once, at most
// 20 and a count of the rest): a simulation of a program other than the one
// written would mislead. The one reader warning that changes nothing, a pg
// member with no program (its peers wait for it for ever, as the simulator
// models it), goes to `notes` when given (the one sink's policy applies:
// once each, capped).
StatusOr<model::DeviceJob> LoadSchedule(const std::string& path, model::DiagnosticSink* notes = nullptr);

// Explores `job`; on a deadlock analyzes the stuck state and, with
// options.search_fixes, simulates the candidate fixes. Errors: the
// simulator refuses the job (InvalidArgument, see Explore).
StatusOr<SimulateReport> Simulate(const model::DeviceJob& job, const SimulateOptions& options);

// The verdict line first ("DEADLOCK ...", "NO DEADLOCK ...", or "NO
// DEADLOCK FOUND WITHIN THE BOUND ..."), then the witness order, the stuck
// state, its analysis and the fixes ("fix: ..."). The witness is cut at
// 400 steps in text (JSON has all).
std::string RenderText(const SimulateReport& report);

// {"hangdx_simulate": 1, "deadlock", "bound_reached", "states", "witness",
// "stuck", "findings", "fixes", ...}; see docs/simulate.md.
std::string RenderJson(const SimulateReport& report);

// 1 when a deadlock was found, else 0.
int ExitCode(const SimulateReport& report);

}  // namespace hangdx::sim
