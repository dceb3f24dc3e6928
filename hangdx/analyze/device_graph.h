// hangdx/analyze/device_graph.h
// The device-level engine: the wait-for graph of a model::DeviceJob
// (semantics in hangdx/model/device.h) and the deadlocks it proves. (The
// rank-level engine is analyze/rank_analysis.h; `hangdx analyze` runs this
// one through the check table's device_level row, checks/device_level.h,
// and the two engines' findings meet in one place only,
// passes/device_meets_rank.h. `hangdx simulate` calls it directly.)
//
// Nodes: per unfinished op, the stages it has not reached yet -- queued (a
// thread has issued it into a task queue), issued (it has reached its
// stream; for a host_sync: its thread has issued it), started, finished --
// plus one k-of-n node per pool whose units are all held, one AND node per
// (pg, seq) collective ("every member has started it"), OR nodes for
// alternatives (an any-source recv, an event recorded by several ops), and
// sinks for ops the job needs but nobody will ever issue ("missing").
// Edges (A -> B: A cannot happen before B), each with a reason in words:
//   issue  <- thread order (and finish of a host-blocking op ahead, or the op
//             the thread is blocked on); queue FIFO (dispatch of the entry
//             ahead, finish of a host-blocking entry ahead or of the op the
//             dispatcher is blocked on)
//   start  <- issue; finish of the task ahead on the stream; a pool unit
//   finish <- start; and by kind: the record of the event (wait, host_sync);
//             the drain of the stream (host_sync on a stream); every member
//             starting the same pg seq (collective); the matching peer op
//             starting (send, recv; any source: any candidate send)
// Orders that the snapshot does not fix (which of two threads' pending ops
// enters a queue first) get no edge: a deadlock found holds whatever that
// order turns out to be. Graph reduction (analyze/wait_graph.h) leaves the
// ops that can never finish; each cyclic component among them yields one
// finding with a minimal witness (a shortest cycle, with the knot of every
// OR / k-of-n node on it), explained step by step.
//
//   DeviceAnalysis a = AnalyzeDevice(job);
//   for (const Finding& f : a.findings) ... f.kind, f.details (the chain)
//
// Linear in ops + edges apart from sorted indexes (O(n log n)). Deterministic.
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/model/device.h"

namespace hangdx::analyze {

// What the device-level analysis of one DeviceJob concludes.
struct DeviceAnalysis {
  // Deadlocks (one per cyclic component, most ops first), then waits on ops
  // that are nowhere in the job (kMissingRank: a member or peer that never
  // issues its op; kUndecided: an event no op records), then for a schedule
  // an info note that points to `hangdx simulate`.
  std::vector<Finding> findings;
  std::vector<model::OpId> deadlocked;          // ops that can never finish, ascending
  std::vector<model::OpId> waiting_on_missing;  // ops that wait (directly) for a missing op, ascending
  std::vector<RankEdge> edges;                  // rank-level steps of the witness cycles (for DOT)
  // Per device rank, sorted: state "deadlocked" (an op that can never
  // finish), "blocked" (waits for a missing op), "running" or "idle"
  // (nothing unfinished); `current` says where its streams and threads are.
  std::vector<RankSummary> ranks;
  bool schedule = false;  // nothing issued: a schedule, not a snapshot
};

// Analyzes `job`. Never fails: ids out of range and other inconsistencies
// are ignored (the reader reports them). Finding evidence names
// job.origin (or the op's source when origin is empty).
DeviceAnalysis AnalyzeDevice(const model::DeviceJob& job);

// The analysis in words, for a caller with no report renderer (the
// simulator on a stuck state): per finding its summary, then its details
// indented by two spaces, then "fix: ..." when there is a fix hint. Empty
// when nothing is stuck.
std::vector<std::string> ExplainDevice(const model::DeviceJob& job);

// A short name for an op, as the findings use it: "all_reduce tp seq 0",
// "send to rank 1 on pp #0", "recv from any rank on pp #0", "wait e1",
// "matmul".
std::string DescribeDevOp(const model::DevOp& op);

}  // namespace hangdx::analyze
