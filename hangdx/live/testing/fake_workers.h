// hangdx/live/testing/fake_workers.h
// FakeWorkers: N fake ranks of a training job, each answering on its own
// loopback port the way torch's control-plane worker server does
// (torch/csrc/distributed/c10d/control_plane/WorkerServer.cpp and
// Handlers.cpp, torch 2.13): GET /handler/ lists the handler names, POST
// /handler/<name> runs one: ping -> "pong"; fr_trace_json, and for the
// "nccl" backend dump_nccl_trace_json?includecollectives=&onlyactive=
// (values "true"/"false", else 400) -> the Flight Recorder JSON of
// FlightRecorder::dump_json (version "2.10", pg_config with each pg's rank
// list, pg_status counters as strings, entries); dump_traceback ->
// faulthandler text; wait_counter_values -> "{}"; another name -> 404.
// Connections are kept alive for `keepalive_max` requests, as cpp-httplib's
// server does (5 by default).
//
// One thread serves every port with epoll, so 10,000 fake ranks fit on a
// laptop: the load benchmark (bench/live_bench.py) and the watch tests use it.
//
//   FakeWorkers fleet({.ranks = 8});
//   HANGDX_RETURN_IF_ERROR(fleet.Start());
//   fleet.Urls()[3] == "http://127.0.0.1:40163"
//   fleet.Hang(3);   // rank 3 stops arriving: the others wait for it
//
// The job: every rank runs one all_reduce per step of `step_seconds`, all
// in the default pg "0". Collectives are synchronous: a rank cannot finish
// seq s until every rank has entered it, and enters s + 1 only after
// finishing s. Faults change that model (below). Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hangdx/base/status.h"

namespace hangdx::live::testing {

struct FakeWorkerOptions {
  int ranks = 8;
  std::string backend = "nccl";  // "nccl" or "gloo" (fr_trace_json only, pg_config keyed "")
  double step_seconds = 0.1;     // one collective per step and rank
  int entries = 20;              // Flight Recorder ring: the last N entries are kept
  int keepalive_max = 5;         // requests per connection, then "Connection: close"
  std::string host = "127.0.0.1";
  int base_port = 0;  // 0: ephemeral ports; else rank r listens on base_port + r (a free range)
  // One job split over several processes (a port and a connection per rank
  // make 10,000 ranks 20,000 descriptors): each process models every rank,
  // serves ranks [serve_from, serve_to) (-1: to the end), and all take the
  // same start time (steady_clock nanoseconds, CLOCK_MONOTONIC; 0: now) and
  // the same fault times, so their answers agree.
  int serve_from = 0, serve_to = -1;
  int64_t start_ns = 0;
};

class FakeWorkers {
 public:
  explicit FakeWorkers(FakeWorkerOptions options);
  ~FakeWorkers();
  FakeWorkers(const FakeWorkers&) = delete;
  FakeWorkers& operator=(const FakeWorkers&) = delete;

  // Binds one ephemeral port per rank and starts serving. Errors (kIo):
  // a socket could not be bound (descriptor limit, no free port).
  Status Start();
  void Stop();

  // "http://127.0.0.1:PORT" per served rank, rank order (the --workers file lines).
  std::vector<std::string> Urls() const;

  // Faults, effective at once. Hang: the rank stops entering collectives
  // (it sits in user code): the others enter the next one and wait (a
  // missing rank). Kill: as Hang, and its port closes (connection
  // refused), as a SIGKILLed rank. Wedge: as Hang, and its server accepts
  // and reads but never answers (a process wedged with the GIL held).
  // Mismatch: the rank's next collective is a broadcast where the others
  // call all_reduce; nobody finishes it. Slow: the rank needs `seconds` per
  // step (the others wait for it: the job slows, it does not stop).
  // `at_ns` (steady_clock nanoseconds, 0: now) is when the fault happens.
  void Hang(int rank, int64_t at_ns = 0);
  void Kill(int rank, int64_t at_ns = 0);
  void Wedge(int rank, int64_t at_ns = 0);
  void Mismatch(int rank, int64_t at_ns = 0);
  void Slow(int rank, double seconds, int64_t at_ns = 0);

  // Requests answered so far (all ranks).
  uint64_t served() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hangdx::live::testing
