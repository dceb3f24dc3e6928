// hangdx/model/device.h
// The device-level model of a job: per rank (one device), host threads that
// issue operators, host task queues, streams with their queued tasks in
// order, events (CUDA events, Ascend events and notifies), and resource
// pools with a capacity (AICPU kernel slots). A rank-level Flight Recorder
// view says "rank 3 waits in all_reduce"; this view says "stream 2 of rank 3
// waits at position 4 for event e7, which stream 1 will record after the
// AICPU operator that cannot get a slot".
//
// One structure serves three producers and one consumer:
//   - the schedule format (`hangdx simulate`): programs only, nothing issued;
//   - the native device snapshot (docs/snapshot-format.md): a state part-way;
//   - HCCL plog chains: the stuck tasks the device logs name;
// and analyze/device_graph builds the typed wait-for graph from it.
//
// Semantics (shared by the simulator and the wait-for graph; see
// docs/snapshot-format.md for the file format):
//   * A thread issues its `pending` ops in order. With task queue mode kOff an
//     op goes straight to the tail of its stream; otherwise it is appended to
//     a queue (kPerDevice: one queue per rank; kPerStream: one queue per
//     stream), whose single dispatcher moves entries to their streams in
//     FIFO order. A host_blocking op blocks whoever issues it (the thread
//     with kOff; the dispatcher, and the issuing thread, with a queue) until
//     the op finishes. kHostSync ops never reach a stream: they block their
//     issuer until `event` is recorded (or, with an empty event, until
//     `stream` has drained).
//   * A stream runs its tasks in order: only the head can start. A task with
//     a `pool` needs one free unit of that pool of its rank to start and
//     holds it until it finishes.
//   * Once started: kCompute and kRecord finish at once (kRecord records
//     `event`); kWait finishes when `event` has been recorded; kCollective
//     finishes when every member of `pg` has started its collective of the
//     same per-pg seq; kSend finishes when the matching kRecv has started and
//     vice versa (the n-th send a -> b on a pg matches the n-th recv at b from
//     a, or from any source when `peer` is -1).
//   * Events are job-wide names, so a notify recorded on one rank and waited
//     on another is one event. An event is recorded once.
//
// Value types only, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hangdx::model {

using Rank = int64_t;  // global rank, as in job.h (which includes this header for Job::device)

// One operator a host thread issues.
struct DevOp {
  enum class Kind : uint8_t {
    kCompute,     // device work that finishes by itself once started
    kRecord,      // records `event` on `stream`
    kWait,        // `stream` waits until `event` is recorded (stream wait event, notify wait)
    kCollective,  // `name` on `pg`: needs every member at the same pg seq
    kSend,        // P2P send to `peer` (global rank) on `pg`
    kRecv,        // P2P recv from `peer`, or any source when peer == -1
    kHostSync,    // host waits for `event` (or for `stream` to drain); never on a stream
  };
  Kind kind = Kind::kCompute;
  std::string name;            // for reports: "all_reduce", "matmul", "record e1"
  Rank rank = -1;              // the rank (device) that issues it
  std::string thread;          // issuing host thread
  std::string stream;          // target stream, device-local name
  std::string event;           // kRecord, kWait, kHostSync
  std::string pg;              // kCollective, kSend, kRecv
  Rank peer = -1;              // kSend, kRecv
  std::string pool;            // needs and holds one unit of this pool while running; "" none
  bool host_blocking = false;  // its issuer waits for it to finish
  bool failed = false;         // the device reported it failed (a device log): it never
                               // finishes, and whatever waits for it waits for a cause
  int64_t seq = -1;            // per-pg seq (collectives) or per-pair count (P2P), from 0;
                               // filled by DeviceJob::Number()
  std::string source;          // evidence: "file:line", or "schedule ranks[0].threads[1].ops[3]"
};

const char* DevOpKindName(DevOp::Kind kind);

// Host task queue mode (PyTorch-NPU TASK_QUEUE_ENABLE and its per-stream variant).
enum class QueueMode : uint8_t { kOff, kPerDevice, kPerStream };
const char* QueueModeName(QueueMode mode);  // "off", "per_device", "per_stream"

// Ops are referred to by their index in DeviceJob::ops.
using OpId = int32_t;

struct HostThread {
  std::string name;
  std::vector<OpId> pending;  // not yet issued, in program order
  OpId blocked_on = -1;       // the host-blocking op it waits for, -1 when free
};

struct TaskQueue {
  std::string name;           // "device" (kPerDevice) or the stream's name (kPerStream)
  std::vector<OpId> entries;  // issued, not yet dispatched, FIFO order
  OpId dispatching = -1;      // a host-blocking op the dispatcher waits for, -1 when free
};

struct Stream {
  std::string name;
  std::vector<OpId> tasks;    // unfinished tasks in order; tasks[0] is the head
  bool head_started = false;  // the head has started (and holds its pool unit, if any)
};

struct Pool {
  std::string name;           // e.g. "aicpu"
  int capacity = 1;           // units
  std::vector<OpId> holders;  // started ops holding one unit each
};

struct DeviceRank {
  Rank rank = -1;
  std::vector<HostThread> threads;
  std::vector<TaskQueue> queues;
  std::vector<Stream> streams;
  std::vector<Pool> pools;
};

// A whole job at the device level: every op ever mentioned, where each one
// is now, and what has already happened (recorded events, finished ops).
struct DeviceJob {
  QueueMode queue_mode = QueueMode::kOff;
  std::map<std::string, std::vector<Rank>> pgs;  // pg -> global member ranks, sorted
  std::vector<DevOp> ops;
  std::vector<DeviceRank> ranks;             // sorted by rank
  std::vector<std::string> recorded_events;  // sorted
  std::vector<bool> finished;                // per op; size == ops.size()
  std::string origin;                        // file or "schedule" it came from
  // Events that no op in the job records but whose producer the evidence
  // names (an HCCL notify that a remote rank should record): event -> who
  // ("rank 2 (no log from it in these files)"), and the global rank when known.
  std::map<std::string, std::string> event_producer;
  std::map<std::string, Rank> event_producer_rank;

  DeviceRank* FindRank(Rank r);
  const DeviceRank* FindRank(Rank r) const;
  // Fills every DevOp::seq still -1: collectives numbered per (rank, pg),
  // P2P per (pg, sender, receiver), continuing after the largest seq already
  // set, in the order: finished ops (in `ops` order), then streams, then
  // queues, then threads (blocked_on, then pending order). An op held
  // nowhere and not finished keeps -1. The simulator sets seq itself at
  // issue time.
  void Number();
};

}  // namespace hangdx::model
