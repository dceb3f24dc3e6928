// hangdx/sim/simulator.h
// Explores the interleavings of a device-level program (model::DeviceJob,
// semantics in hangdx/model/device.h) and finds a deadlock if some
// interleaving reaches one: a state where no thread, dispatcher or stream can
// move and not every op has finished.
//
//   auto r = sim::Explore(job);           // job: threads' `pending` hold the program
//   if (r.ok() && r->deadlock) for (const auto& s : r->witness) puts(s.text.c_str());
//
// The search is a depth-first search over transitions with a visited-state
// set (states are remembered by a 128-bit incremental hash), which looks
// only at the parts of the job that the last transition may have let move
// (candidates.h: a step costs what it changed, not a scan of the job), and
// partial-order reduction: a transition that commutes with every transition
// any other part of the job could take before it (a stream head finishing,
// a dispatch, an issue to a stream or queue no other thread of the rank
// will use, a pooled start that can never run short of units) is taken
// alone; only conflicting transitions branch. docs/simulate.md explains why
// this finds every deadlock the full search finds. Bounds (states, depth,
// seconds, memory) cut the search; a cut search says so (bound_reached) and never
// claims that no deadlock exists.
//
// Clarifications of device.h that the simulator fixes:
//   * A host_sync on a stream waits for the ops destined to that stream
//     (on it or in a queue for it) when the host_sync is issued, as
//     cudaStreamSynchronize does; ops issued later are not waited for.
//   * Collective seqs are taken at issue, per (rank, pg); send and named-recv
//     counts at issue, per (pg, sender, receiver). An any-source recv is
//     matched when it finishes: with the next unmatched send of any sender
//     whose send has started (one branch per sender), taking that pair's
//     next recv count.
//   * Ops already placed in the input (on streams, in queues, blocking a
//     thread, finished) keep their place; their seqs are renumbered in
//     DeviceJob::Number's order, given seqs are ignored.
//
// Not thread-safe per call; Explore may run concurrently on different jobs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/device.h"

namespace hangdx::sim {

// Limits of one exploration. A search that hits one stops and reports
// bound_reached: it has not shown that no deadlock exists.
struct ExploreOptions {
  int64_t max_states = 1'000'000;  // distinct states visited
  int64_t max_depth = 1'000'000;   // transitions from the start on one path
  double max_seconds = 300;        // wall clock of this exploration
  // Everything the search holds: the visited-state set (16 bytes a slot,
  // at most half full), the branch lists of the path's branching states, the
  // undo trails and the path. The compiled job and its state come on top
  // (about 16 bytes per op plus 12 per rank).
  int64_t max_memory_bytes = int64_t{1} << 30;
  bool partial_order_reduction = true;  // false: branch on every enabled transition
};

// One transition of the job, for the witness order.
struct Step {
  enum class Kind : uint8_t {
    kIssue,     // a thread issues its next op (to a stream, a queue, or a host_sync)
    kDispatch,  // a queue's dispatcher moves its head entry to its stream
    kStart,     // a stream head starts (compute and record also finish at once)
    kFinish,    // a started stream head finishes
    kSyncDone,  // a thread's host_sync returns
  };
  Kind kind = Kind::kIssue;
  model::Rank rank = -1;
  model::OpId op = -1;  // index into DeviceJob::ops
  std::string text;     // "rank 0 thread comm issues all_reduce (tp seq 0) to the device queue"
};

struct ExploreResult {
  bool deadlock = false;
  bool bound_reached = false;  // a bound cut the search (no deadlock found within it)
  std::string bound;           // which: "max states 1000000", "max depth 50", "max seconds 300", "memory: ..."
  int64_t states = 0;          // distinct states visited
  int64_t transitions = 0;     // transitions executed (including ones into visited states)
  // Streams, queues and threads the search looked at to choose its
  // transitions: its cost, independent of the machine. With reduction it
  // grows with what the transitions changed (a few per transition for a
  // schedule with nothing to explore); without, every part of the job is
  // looked at in every state.
  int64_t examined = 0;
  double seconds = 0;                // wall clock of the search
  std::vector<Step> witness;         // deadlock: the transitions from the start to the stuck state
  model::DeviceJob stuck;            // deadlock: the stuck state (queues, streams, holders, events)
  std::vector<std::string> blocked;  // deadlock: what each stuck thread, dispatcher and stream head waits for
};

// Explores every interleaving of `job` from its current state (for a
// schedule: nothing issued yet), within `options`' bounds, and stops at the
// first deadlock found. Returns InvalidArgument when the job cannot run as
// given: an op listed twice or by no valid index, a pg or pool that does not
// exist, a rank outside the pg it uses, a send without a peer, a stream or
// event missing where the kind needs one. Never loops: every transition
// moves some op forward, and the bounds hold.
StatusOr<ExploreResult> Explore(const model::DeviceJob& job, const ExploreOptions& options = {});

// A short human name for an op: "all_reduce (tp seq 0)", "send to 1 (pp)",
// "record e1", "wait e1", "host_sync on stream comm".
std::string OpLabel(const model::DevOp& op);

}  // namespace hangdx::sim
