// hangdx/model/testing/device_job_builder.h
// Builds a device-level model::DeviceJob (semantics in model/device.h) in a
// few lines, for device-graph tests, simulator tests and benchmarks. The one
// builder of device jobs, in two styles that can be mixed:
//
// A schedule (what `hangdx simulate` reads: threads' programs, nothing
// issued). Each adder appends one op to the program of (rank, thread),
// creating the rank and the thread on first use, and returns the op for
// further fields (the reference is valid until the next adder call):
//
//   model::testing::DeviceJobBuilder b(model::QueueMode::kPerDevice);
//   b.Pg("tp", {0, 1});
//   b.Record(0, "compute", "compute", "e0");
//   b.Collective(0, "comm", "comm", "tp", "all_reduce").host_blocking = true;
//   model::DeviceJob job = b.Build();
//
// A snapshot (a state part-way): create ops with Op(), then say where each
// one is (a stream, a queue, a thread's program or blocked_on, a pool's
// holders, finished):
//
//   model::testing::DeviceJobBuilder b;
//   model::OpId w = b.Op(0, model::DevOp::Kind::kWait, "s1", "B");
//   model::OpId r = b.Op(0, model::DevOp::Kind::kRecord, "s1", "A");
//   b.Stream(0, "s1", {w, r});
//   analyze::AnalyzeDevice(b.Build());
//
// Ops are sourced "op <index>"; the job's origin is "test.json" (a file
// name, as a loaded schedule or snapshot has; Origin() changes it). Not
// thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/model/device.h"

namespace hangdx::model::testing {

class DeviceJobBuilder {
 public:
  explicit DeviceJobBuilder(QueueMode mode = QueueMode::kOff) { job_.queue_mode = mode; }

  // Declares pg `name` with these global member ranks (sorted here).
  DeviceJobBuilder& Pg(const std::string& name, std::vector<Rank> members);
  // Declares a pool of `capacity` units on rank r, held by `holders` (ops
  // already started; a snapshot).
  DeviceJobBuilder& Pool(Rank r, const std::string& name, int capacity, std::vector<OpId> holders = {});
  DeviceJobBuilder& Origin(std::string origin);

  // --- Schedule adders: append to the program of (rank r, thread). ---
  DevOp& Compute(Rank r, const std::string& thread, const std::string& stream, const std::string& name = "compute",
                 const std::string& pool = "");
  DevOp& Record(Rank r, const std::string& thread, const std::string& stream, const std::string& event);
  DevOp& Wait(Rank r, const std::string& thread, const std::string& stream, const std::string& event);
  DevOp& Collective(Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                    const std::string& name = "all_reduce", const std::string& pool = "");
  DevOp& Send(Rank r, const std::string& thread, const std::string& stream, const std::string& pg, Rank peer);
  // peer -1: any source.
  DevOp& Recv(Rank r, const std::string& thread, const std::string& stream, const std::string& pg, Rank peer);
  DevOp& SyncEvent(Rank r, const std::string& thread, const std::string& event);
  DevOp& SyncStream(Rank r, const std::string& thread, const std::string& stream);

  // --- Snapshot: ops first, then where they are. ---
  // An op of rank r, thread "main", held nowhere yet. `arg` is the event
  // (record, wait, host_sync: with an empty `arg` a host_sync waits for
  // `stream`), the pg (collective, send, recv) or the name (compute;
  // default "compute"). Names: "all_reduce", "send", "recv".
  OpId Op(Rank r, DevOp::Kind kind, const std::string& stream, const std::string& arg = "", Rank peer = -1,
          const std::string& pool = "", bool blocking = false);
  // Rank r's stream `name` holds `tasks` in order (the head started or not).
  DeviceJobBuilder& Stream(Rank r, const std::string& name, std::vector<OpId> tasks, bool head_started = false);
  // Rank r's task queue `name` holds `entries`; its dispatcher waits for
  // `dispatching` (-1: free).
  DeviceJobBuilder& Queue(Rank r, const std::string& name, std::vector<OpId> entries, OpId dispatching = -1);
  // Rank r's thread `name` (created on first use) has `pending` left to
  // issue, after what it has already, and is blocked on `blocked_on` (-1:
  // free). Pending ops that exist are renamed to this thread.
  DeviceJobBuilder& Thread(Rank r, const std::string& name, std::vector<OpId> pending, OpId blocked_on = -1);
  // Op `id` has finished.
  DeviceJobBuilder& Done(OpId id);

  // The job: ranks sorted, `finished` sized (Done ops set), seqs numbered
  // (DeviceJob::Number, as the schedule and snapshot reader does).
  DeviceJob Build() const;

 private:
  DeviceRank& RankOf(Rank r);
  HostThread& ThreadOf(Rank r, const std::string& name);
  DevOp& Add(Rank r, const std::string& thread, DevOp::Kind kind, const std::string& stream);
  DevOp& P2p(Rank r, const std::string& thread, DevOp::Kind kind, const std::string& stream, const std::string& pg,
             Rank peer);
  DevOp& NewOp(Rank r, DevOp::Kind kind, const std::string& thread, const std::string& stream);

  DeviceJob job_;
  std::map<Rank, size_t> index_;  // rank -> job_.ranks
  std::vector<OpId> done_;
};

}  // namespace hangdx::model::testing
