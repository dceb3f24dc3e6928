// hangdx/analyze/world.h
// Step 1 of the rank-level analysis (analyze/rank_analysis.h): which ranks
// form the job. The world size comes from --world-size, else from a default
// pg config that lists its members, else from the highest rank any file
// names -- unless that rank is far above the number of ranks with data (a
// typo, a hostile file), when it is left unknown rather than guessed; a
// given or recorded size past kMaxListedWorld with few ranks with data is
// left unknown too, since every rank without data costs a summary.
//
//   World w = ResolveWorld(job, &diags);
//   if (w.size >= 0) ... ranks 0 .. w.size - 1; w.without_dump lists the silent ones
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::analyze {

// The largest world whose ranks without data are listed one by one when
// --world-size or a default pg config gives it (a larger one with few
// ranks with data is left unknown, with a warning). 2^17 so that the
// 100,000-rank jobs the tool is for are listed when --world-size gives them
// (measured: three dumps with --world-size 100000, JSON, 0.65 s, 176 MB).
inline constexpr int64_t kMaxListedWorld = int64_t{1} << 17;

struct World {
  int64_t size = -1;                      // ranks 0 .. size-1 form the world; -1: unknown (not guessed)
  int64_t reported_size = 0;              // Diagnosis::world_size: `size`, or the number of dumps when unknown
                                          // (Analyze raises it past every rank the report lists)
  bool inferred = true;                   // neither given (--world-size) nor recorded in a default pg config
  std::vector<model::Rank> without_dump;  // ranks below `size` with no dump, ascending
};

// Resolves the world of `job` (dumps sorted by rank). Adds a warning to
// `diags` when the rank numbers are too high to believe. Never fails.
World ResolveWorld(const model::Job& job, model::DiagnosticSink* diags);

// True when a log of rank r says it crashed (CUDA error, abort, ...), that
// it was killed by a fault signal (KilledByFaultSignal: SIGSEGV, SIGKILL of
// the OOM killer, ...), or that its exit was the job's first failure by its
// launcher's account (torchrun's root cause, exit code > 0 or SIGABRT), unless its own
// timeout or lost peer brought that on (an exit after it is the teardown, a
// consequence) or its launcher had stopped it first (a victim): the rank is
// dead whether or not anyone was seen waiting for it.
bool Crashed(const model::Job& job, model::Rank r);

// The fault signal exit event `e` says ended the process, -1 none: SIGILL 4,
// SIGBUS 7, SIGFPE 8, SIGKILL 9 (the OOM killer, the scheduler), SIGSEGV 11,
// from its signal, a launcher's negative exit code (torchelastic's
// "exitcode: -11", Python's returncode) or "Signals.SIGKILL". SIGTERM,
// SIGINT and SIGABRT are not: they are how launchers and c10d's watchdog
// end processes on purpose.
int64_t FaultSignal(const model::LogEvent& e);
inline bool KilledByFaultSignal(const model::LogEvent& e) { return FaultSignal(e) > 0; }

// True when Flight Recorder dump `d` records no op, no process group and no
// wait state: the recorder was off (TORCH_FR_BUFFER_SIZE=0 gives
// `pg_config {}` and no entries). A rank that wrote a dump was alive; one
// that records nothing says nothing of where it is, so it counts as a rank
// without a dump for every (pg, seq), never as one that did not arrive.
bool RecordsNothing(const model::RankDump& d);

// True when `d` says nothing of which collectives its rank reached: a
// Flight Recorder dump that records nothing (RecordsNothing), or a rank
// known only from a stack dump or a log with no op, no pg and no wait state
// (a faulthandler stack, a traceback). Such a rank counts as one without a
// dump for every (pg, seq): beside the others' dumps it took part in every
// seq they got past, never "did not arrive" at seq 1 (the fresh-user
// tester's c_stacks dumps of ranks 0-1 with rank 2's stack).
bool RecordsNoCollective(const model::RankDump& d);

// True when exit event `e` says the process died without being asked to:
// KilledByFaultSignal, Ray's worker exit type SYSTEM_ERROR (ray.core.actor_died:
// "Worker exit type: SYSTEM_ERROR", from GenWorkerDiedCause in Ray's GCS actor
// manager, 2.x: a crash, an OOM kill or a lost connection to the worker), or
// the launcher's first observed failure with a failing exit code; never an
// exit the launcher caused (LogEvent::ExitRole::kStopped) or one the process
// chose (INTENDED_USER_EXIT, exit code 0).
bool DiedUnexpectedly(const model::LogEvent& e);

// "SIGSEGV" for 11 (the fault signals and SIGTERM, SIGINT, SIGABRT), else
// "signal N".
std::string SignalName(int64_t signal);

}  // namespace hangdx::analyze
