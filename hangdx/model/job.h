// hangdx/model/job.h
// The normalized model of one distributed job as hangdx sees it: what every
// rank recorded (operations per process group, process-group configs, live
// wait snapshots), independent of the file format it came from. Parsers in
// ingest/ fill it; analyses in analyze/ read it and never see a file format.
//
// Vocabulary (see model/README.md): rank = global rank; pg = process group;
// seq = the per-pg collective sequence number (`collective_seq_id` in PyTorch
// Flight Recorder); P2P = send/recv with a named peer.
//
// Value types only, no I/O. Not thread-safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hangdx::model {

using Rank = int64_t;   // global rank
using Shape = std::vector<int64_t>;

// A problem with the input data: never fatal. `offset` is a byte offset into
// `file` (or -1), `rank` the rank the file belongs to (or -1).
struct Diagnostic {
  enum class Severity { kInfo, kWarning, kError };
  Severity severity = Severity::kWarning;
  std::string file;
  int64_t offset = -1;
  Rank rank = -1;
  std::string message;
};

// One stack frame as Flight Recorder records it (innermost first).
struct Frame {
  std::string name;
  std::string filename;
  int64_t line = 0;
};

// Where the state of an operation came from matters for how far it can be
// trusted: gloo never sets `state` beyond "scheduled", so completion is
// derived from pg_status (see RankDump::pg_status).
enum class OpState : uint8_t { kUnknown, kScheduled, kStarted, kCompleted };

// One operation (collective or P2P) as one rank recorded it: a Flight
// Recorder entry. Times are wall-clock nanoseconds since the epoch, 0 when
// unknown. Sizes are tensor shapes in elements per dimension.
struct OpRecord {
  int64_t record_id = -1;       // per-process ring-buffer id (all pgs)
  int64_t pg_id = -1;           // the pg's process-local numeric id
  std::string pg_name;          // joins RankDump::pg_config
  std::string pg_desc;
  int64_t collective_seq = -1;  // per-pg collective counter
  int64_t p2p_seq = -1;         // per-pg P2P counter
  int64_t op_id = -1;           // per-pg logical op counter
  std::string profiling_name;   // e.g. "nccl:all_reduce", "nccl:send 0->1"
  std::string backend;          // "nccl", "gloo", ...
  std::string op;               // "all_reduce", "send", "coalesced", ...
  bool is_p2p = false;
  int64_t p2p_self_local = -1;  // group-local ranks parsed from "send 0->1"
  int64_t p2p_peer_local = -1;
  std::vector<Shape> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  OpState state = OpState::kUnknown;
  bool retired = false;
  // True when the op is known to have finished: state "completed", or (for
  // backends that never set state) its seq is <= the pg's last completed seq.
  bool completed = false;
  int64_t time_created_ns = 0;
  int64_t time_started_ns = 0;
  int64_t time_completed_ns = 0;
  double duration_ms = -1;      // -1: not recorded
  int64_t timeout_ms = -1;      // -1: not recorded
  std::vector<uint32_t> frames; // indices into RankDump::frames, innermost first
  std::string thread_name, thread_id;
};

// A process group as one rank's dump describes it.
struct PgConfig {
  std::string name, desc;
  std::vector<Rank> ranks;   // global ranks, sorted
  bool ranks_known = false;  // false when the dump records no members (gloo)
};

// Flight Recorder `pg_status[pg_id]`: last enqueued / started / completed
// collective seq, -1 when none.
struct PgStatus {
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

// A live wait report from a health watchdog: the op this rank is blocked in
// and the ranks it waits for (an AND wait: it needs all of them).
struct WaitSnapshot {
  std::string current_op;
  std::vector<Rank> waiting_for;
  int64_t op_seq = -1;
  bool any_of = false;  // OR wait (any-source receive): needs any one of them
};

// Everything one rank's artifact says. `ops` are in recording order.
struct RankDump {
  Rank rank = -1;
  std::string file;        // path as given by the user
  std::string format;      // "fr-pickle", "fr-json", "wait-snapshot"
  std::string version;     // Flight Recorder "MAJOR.MINOR", "" if none
  std::string comm_lib_version;
  std::vector<OpRecord> ops;
  std::vector<Frame> frames;                 // interned, shared by ops
  std::map<std::string, PgConfig> pg_config; // by pg name
  std::map<int64_t, PgStatus> pg_status;     // by pg_id
  std::optional<WaitSnapshot> wait;
};

// The whole job: one RankDump per rank (sorted by rank, unique), plus every
// data problem met while reading. `world_size` is -1 unless known (from a
// flag, or from a pg config that lists the default pg's ranks).
struct Job {
  std::vector<RankDump> dumps;
  std::vector<Diagnostic> diagnostics;
  std::vector<std::string> files;  // every input file looked at
  int64_t world_size = -1;

  const RankDump* Find(Rank r) const;
};

// Splits a profiling name "backend:op[ meta]" into backend and op, and for
// P2P ("send 0->1", "recv 1<-0") the group-local self and peer ranks.
// Unknown shapes leave backend empty and op = the whole name. Never fails.
void ParseProfilingName(OpRecord* op);

// Returns the number of elements of `shape` (1 for a scalar shape []), or
// saturates at INT64_MAX on overflow.
int64_t Numel(const Shape& shape);

}  // namespace hangdx::model
