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
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hangdx/model/device.h"

namespace hangdx::model {

using Rank = int64_t;  // global rank
// Ranks are below this (2^24, more than any job has had): a rank number a
// file or flag names past it is refused, since rank lists, world sizes and
// the ranks "without a dump" would grow with it.
inline constexpr Rank kMaxRank = Rank{1} << 24;
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

// A Diagnostic in one expression: severity, file, message, and where known
// the rank and byte offset.
inline Diagnostic MakeDiagnostic(Diagnostic::Severity severity, std::string file, std::string message, Rank rank = -1,
                                 int64_t offset = -1) {
  Diagnostic d;
  d.severity = severity;
  d.file = std::move(file);
  d.offset = offset;
  d.rank = rank;
  d.message = std::move(message);
  return d;
}

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

// A pointer to an immutable value interned in a RankDump's Interner: equal
// values recorded by many entries (shapes, dtypes, stacks) are stored once.
// Compares by value. Default: an empty T.
template <typename T>
class Ref {
 public:
  Ref() : p_(&Empty()) {}
  explicit Ref(const T* p) : p_(p) {}
  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_; }
  operator const T&() const { return *p_; }  // NOLINT: reads like the value
  bool operator==(const Ref& o) const { return p_ == o.p_ || *p_ == *o.p_; }
  bool operator==(const T& v) const { return *p_ == v; }

 private:
  static const T& Empty() {
    static const T empty{};
    return empty;
  }
  const T* p_;
};

using Shapes = std::vector<Shape>;
using Dtypes = std::vector<std::string>;
using Stack = std::vector<uint32_t>;  // indices into RankDump::frames, innermost first

// Owns the interned strings and values of one RankDump. Not thread-safe: one
// parser thread fills one dump. Addresses are stable for its lifetime.
class Interner {
 public:
  std::string_view Str(std::string_view s);
  // Str() for a parser reading one immutable buffer: the same bytes at the
  // same address (a memoised pickle string) skip the lookup. Call
  // ForgetAddresses() before the buffer goes away.
  std::string_view StrFromBuffer(std::string_view s);
  // Frees the address cache (StrFromBuffer builds it again on first use).
  void ForgetAddresses() { std::vector<Slot>().swap(cache_); }
  // Slots of the address cache now held (0 or 1,024): its memory, for tests.
  size_t CacheSlots() const { return cache_.size(); }
  Ref<Shapes> Intern(Shapes v) { return Ref<Shapes>(&*shapes_.insert(std::move(v)).first); }
  Ref<Dtypes> Intern(Dtypes v) { return Ref<Dtypes>(&*dtypes_.insert(std::move(v)).first); }
  Ref<Stack> Intern(Stack v) { return Ref<Stack>(&*stacks_.insert(std::move(v)).first); }
  // Same, copying `v` only when it is new (parsers reuse one scratch value).
  template <typename T>
  Ref<T> InternCopy(const T& v) {
    auto& set = SetOf(static_cast<const T*>(nullptr));
    auto it = set.find(v);
    if (it == set.end()) it = set.insert(v).first;
    return Ref<T>(&*it);
  }

 private:
  std::set<std::string, std::less<>> strings_;
  // Pickle dumps memoise strings: the same bytes come back at the same
  // address, so a pointer-keyed cache skips most lookups. 1,024 slots (32
  // KB), made on the first StrFromBuffer and freed by ForgetAddresses: a
  // rank that holds one wait (a 100,000-rank snapshot) carries none.
  static constexpr size_t kCacheSlots = 1024;
  struct Slot {
    const char* data = nullptr;
    size_t size = 0;
    std::string_view value;
  };
  std::vector<Slot> cache_;
  std::set<Shapes> shapes_;
  std::set<Dtypes> dtypes_;
  std::set<Stack> stacks_;
  std::set<Shapes>& SetOf(const Shapes*) { return shapes_; }
  std::set<Dtypes>& SetOf(const Dtypes*) { return dtypes_; }
  std::set<Stack>& SetOf(const Stack*) { return stacks_; }
};

// One operation (collective or P2P) as one rank recorded it: a Flight
// Recorder entry. Times are wall-clock nanoseconds since the epoch, 0 when
// unknown. Sizes are tensor shapes in elements per dimension. Strings and
// shared values live in the owning RankDump's Interner.
struct OpRecord {
  int64_t record_id = -1;    // per-process ring-buffer id (all pgs)
  int64_t pg_id = -1;        // the pg's process-local numeric id
  std::string_view pg_name;  // joins RankDump::pg_config
  std::string_view pg_desc;
  int64_t collective_seq = -1;      // per-pg collective counter
  int64_t p2p_seq = -1;             // per-pg P2P counter
  int64_t op_id = -1;               // per-pg logical op counter
  std::string_view profiling_name;  // e.g. "nccl:all_reduce", "nccl:send 0->1"
  std::string_view backend;         // "nccl", "gloo", ...
  std::string_view op;              // "all_reduce", "send", "coalesced", ...
  int32_t p2p_self_local = -1;      // group-local ranks parsed from "send 0->1"
  int32_t p2p_peer_local = -1;
  Ref<Shapes> input_sizes, output_sizes;
  Ref<Dtypes> input_dtypes, output_dtypes;
  Ref<Stack> frames;
  OpState state = OpState::kUnknown;
  bool is_p2p = false;
  bool retired = false;
  // True when the op is known to have finished: state "completed", or (for
  // backends that never set state) see ingest::DeriveCompletion.
  bool completed = false;
  // The file this record came from: -1 = the owning RankDump::file, k =
  // RankDump::extra_files[k] (records merged from another artifact).
  int32_t source = -1;
  int64_t time_created_ns = 0;
  int64_t time_started_ns = 0;
  int64_t time_completed_ns = 0;
  double duration_ms = -1;  // -1: not recorded
  int64_t timeout_ms = -1;  // -1: not recorded
  std::string_view thread_name, thread_id;
};

// A sorted list of global ranks shared by every dump that records the same
// list (each rank's dump repeats the default pg's members: at 100,000 ranks,
// copies would not fit in memory). Immutable; compares by value.
class SharedRanks {
 public:
  SharedRanks() = default;
  SharedRanks(std::vector<Rank> v)  // NOLINT: a list of ranks is a SharedRanks
      : p_(std::make_shared<const std::vector<Rank>>(std::move(v))) {}
  explicit SharedRanks(std::shared_ptr<const std::vector<Rank>> p) : p_(std::move(p)) {}
  const std::vector<Rank>& get() const { return p_ ? *p_ : Empty(); }
  operator const std::vector<Rank>&() const { return get(); }  // NOLINT
  bool operator==(const std::vector<Rank>& v) const { return get() == v; }
  bool operator==(const SharedRanks& o) const { return p_ == o.p_ || get() == o.get(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  auto begin() const { return get().begin(); }
  auto end() const { return get().end(); }
  Rank back() const { return get().back(); }

 private:
  static const std::vector<Rank>& Empty() {
    static const std::vector<Rank> empty;
    return empty;
  }
  std::shared_ptr<const std::vector<Rank>> p_;
};

// A process group as one rank's dump describes it.
struct PgConfig {
  std::string name, desc;
  SharedRanks ranks;         // global ranks, sorted
  bool ranks_known = false;  // false when the dump records no members (gloo)
  // How many members the record says the pg has, -1 when it does not say.
  // Known even when `ranks` is not: an NCCL op line's `[nranks=N]` without
  // the communicator's Init line, so that the members who left no record
  // can still be counted (analyze::Group::size).
  int64_t size = -1;
  // This dump's rank inside the pg (a communicator-local rank: NCCL Init
  // lines, HCCL group info), -1 when unknown. With the dump's global rank it
  // maps pg-local ranks to global ones (ingest::MapPgLocalRanks).
  int64_t self_local = -1;
};

// Flight Recorder `pg_status[pg_id]`: last enqueued / started / completed
// collective seq, -1 when none.
struct PgStatus {
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

// A live wait report from a health watchdog: the op this rank is blocked in
// and the ranks it waits for (an AND wait: it needs all of them).
struct WaitSnapshot {
  // A wait that lasted this long is a hang when its producer set no
  // threshold: hangdx watch's default --stall-after.
  static constexpr int64_t kDefaultStallAfterMs = 30000;

  std::string current_op;
  std::vector<Rank> waiting_for;
  int64_t op_seq = -1;
  bool any_of = false;  // OR wait (any-source receive): needs any one of them
  // When `waiting_for` holds ranks local to pg `pg` whose global ranks are
  // unknown (an HCCL plog names the remote rank inside its group).
  std::string pg;
  bool pg_local = false;
  // How long the rank had been in this wait when the state was taken, as
  // its producer measured (hangdx watch: since the rank's counters last
  // moved); -1 when not given. A point-in-time wait is not a hang by
  // itself: only a wait of stall_after_ms (else kDefaultStallAfterMs) or more is.
  int64_t waited_ms = -1;
  int64_t stall_after_ms = -1;

  // True when the state says the rank has waited past the stall threshold.
  bool Stalled() const {
    return waited_ms >= 0 && waited_ms >= (stall_after_ms > 0 ? stall_after_ms : kDefaultStallAfterMs);
  }
};

// A stack of one thread of a rank, innermost frame first, as a stack dump
// (py-spy, gdb, faulthandler) or a log traceback shows it.
struct StackSample {
  std::string thread;          // thread name or id as printed, "" if none
  std::vector<Frame> frames;   // innermost first
  std::string file;            // artifact it came from
  int64_t line = -1;           // 1-based line in `file` where it starts
  int64_t frames_dropped = 0;  // outermost frames the parser did not keep (its cap on a runaway recursion)
};

// A notable line in a rank's log: a watchdog timeout, a crash, a detected
// mismatch, an exit. `pg`/`seq`/`op` are filled when the line names them.
//
// Events read through the message catalogue (ingest/messages: every
// producer's hang messages, one row per wording) also say which row read
// them and carry what the message names beyond pg / seq / op.
struct LogEvent {
  enum class Kind {
    kTimeout,    // this rank's op did not finish within its timeout
    kCrash,      // this rank failed by itself (CUDA error, segfault, OOM)
    kMismatch,   // the producer compared ranks' ops and found them different
    kExit,       // the process exited or was killed (exit code, signal)
    kOther,      // notable, no claim the analysis reads
    kCulprit,    // the producer names the ranks to blame (desync report, stall inspector, fr_trace)
    kStall,      // a rank has waited long, no timeout fired yet: maybe a hang
    kPeerLost,   // a connection to a peer closed / reset / timed out
    kAbort,      // the process was taken down because of a timeout
    kHeartbeat,  // the watchdog / heartbeat monitor itself is stuck
    kProgress,   // normal progress was logged after this point
    kConfig,     // a setting relevant to known bugs (setting = value)
    kThreadError,  // an uncaught exception ended one thread of the process, not its main one (`thread`):
                   // the process lives on, that thread's work stopped
  };
  Kind kind = Kind::kOther;
  std::string message;  // the line (or its key part), trimmed
  std::string file;
  int64_t line = -1;  // 1-based
  std::string pg;     // pg name as the log gives it, "" if none
  int64_t seq = -1;
  std::string op;
  std::string message_id;         // catalogue row that read it ("torch.desync.finished_not_joined"), "" otherwise
  std::string error;              // the error type the message names (fr_trace's "SIZE_OR_SYNTAX_MISMATCH"), "" none
  std::vector<Rank> ranks;        // ranks the message names as culprits / missing / lagging
  std::vector<Rank> ready_ranks;  // ranks it names as arrived / fine
  bool ranks_pg_local = false;    // `ranks` / `ready_ranks` are ranks inside `pg`, not global
  Rank peer = -1;                 // the other side (global rank), -1 unknown
  std::string peer_addr;          // or its address as printed ("10.0.0.1:29500")
  int64_t waited_ms = -1;         // how long the rank had waited when it printed this (kProgress: how long the
                                  // step it reports took), -1 unknown
  int64_t timeout_ms = -1;        // the timeout in force, -1 unknown
  int64_t exit_code = 0;          // kExit: the exit code (negative: killed by signal -exit_code)
  int64_t signal = -1;            // kExit / kCrash: the signal, -1 none
  // kExit: what the launcher that reports the exit says of it.
  enum class ExitRole : uint8_t {
    kNone,          // nothing beyond the exit itself
    kFirstFailure,  // the job's first observed failure (torchrun's "Root Cause (first observed failure)")
    kStopped,       // the launcher stopped it because another process failed (torchrun's "Sending process P
                    // closing signal SIGTERM"): a victim
    kEndedInOrder,  // it exited 0 (torchrun's failure summary lists every worker that did not, and not it)
  };
  ExitRole exit_role = ExitRole::kNone;
  std::string setting, value;     // kConfig: NCCL_LAUNCH_MODE = GROUP
  // Wall-clock time the line carries (its timestamp), ns since the epoch;
  // 0 when it has none. Orders events of different files (a stall warning
  // on one rank, progress on another) and gives the job's rhythm.
  int64_t time_ns = 0;
  // The message is the error the rank's pending op raised (its catalogue
  // row says `ends op`): that op ended, failed, when this was printed.
  bool ends_op = false;
  // kThreadError: the name of the thread that raised, as Python printed it
  // ("Exception in thread loader:"); "" otherwise.
  std::string thread;
};

// A device task that a device log reports stuck or failed: an HCCL plog's
// notify-wait timeout (EI0002, "Task run failed ... taskType[Notify Wait]"),
// or a runtime task failure (AICPU exception, fftsplus/SDMA error). The raw
// material of the device-level chain that ingest::BuildPlogDeviceJob builds.
struct DeviceTaskReport {
  std::string stream, task, task_type;  // ids and type as printed: "109", "38", "Notify Wait"
  std::string group;                    // HCCL group (communicator), "" unknown
  int64_t remote_local = -1;            // a notify wait: the rank inside `group` that should record it
  std::string notify;                   // notify id as printed, "" unknown
  std::string op;                       // the collective, "all_reduce"; "" unknown
  bool failed = false;                  // the device reports the task failed: it never finishes
  std::string what;                     // short description: "AICPU kernel failed (errorCode 2a)"
  std::string file;
  int64_t line = -1;  // 1-based line in `file`
};

class OpHistory;  // model/history.h

// Everything one rank's artifact says. `ops` are in recording order. Copies
// share the interner, so an OpRecord stays valid in every copy.
struct RankDump {
  Rank rank = -1;
  std::shared_ptr<Interner> interner = std::make_shared<Interner>();
  std::string file;     // path as given by the user
  std::string version;  // Flight Recorder "MAJOR.MINOR", "" if none
  std::string comm_lib_version;
  std::vector<OpRecord> ops;
  std::vector<Frame> frames;                               // interned, shared by ops
  std::map<std::string, PgConfig, std::less<>> pg_config;  // by pg name
  std::map<int64_t, PgStatus> pg_status;                   // by pg_id
  std::optional<WaitSnapshot> wait;
  std::vector<StackSample> stacks;             // from stack dumps and tracebacks
  std::vector<LogEvent> events;                // from text logs
  std::vector<DeviceTaskReport> device_tasks;  // stuck or failed device tasks (HCCL plogs)
  std::vector<std::string> extra_files;        // other artifacts merged into this rank
  // True when the rank's ops come from a Flight Recorder dump (log records
  // may be merged into it): a ring buffer of every op the process issued, so
  // an op of a pg that is not in it was not issued, as far back as the
  // buffer reaches. False for ops read from logs and reports (NCCL INFO,
  // c10d, HCCL plogs, NCCL RAS), which show only what they happened to
  // print, and for ranks with no ops (stack dumps, wait snapshots). Set by
  // ingest; analyses read this, never the file format.
  bool from_flight_recorder = false;
  // Set when ingest kept only some of the rank's records (ingest/compact.h):
  // `history` then covers every op it recorded (compact, model/history.h),
  // `ops` holds the records a report may show, in recording order, and
  // op_pos[i] is the position of ops[i] among all of them. Both empty when
  // `ops` is complete; analyses read the history of every dump through
  // model::Histories, so they see the same either way.
  std::shared_ptr<const OpHistory> history;
  std::vector<uint32_t> op_pos;
};

// One kind of message ingest recognised in an input file (a catalogue row,
// or a line a format reads without one).
struct RecognisedMessage {
  std::string message_id;  // the catalogue row ("vllm.shm.no_block_v3"), or the format's name for its own lines
  std::string event;       // what it proves, as the row's `event` says: "stall", "progress", "info", "timeout", ...
  std::string proves;      // the row's one sentence ("a reader waited 60 s for the next broadcast block")
  int64_t count = 0;       // lines (or blocks) of the file it matched
};

// What ingest made of one input file, recorded whether or not it gave any
// rank's records: a file that was read but shows no hang gets a verdict that
// says what was read in it, and one no format read can be named by the
// producer it most resembles.
struct FileRead {
  std::string file;
  std::string format;                       // the format that read it ("torch-log"); "" when none did
  std::vector<RecognisedMessage> messages;  // in order of first appearance
  std::string looks_like;                   // read by no format: the producer it resembles, "" when none
  Rank rank = -1;                           // the rank its name (or --rank, or its one dump) gives, -1 unknown
  uint64_t bytes = 0;                       // its size: a rank whose file is empty left no log
};

// The whole job: one RankDump per rank (sorted by rank, unique), plus every
// data problem met while reading. `world_size` is -1 unless known (from a
// flag, or from a pg config that lists the default pg's ranks).
struct Job {
  std::vector<RankDump> dumps;
  std::vector<Diagnostic> diagnostics;
  std::vector<std::string> files;  // every input file looked at
  int64_t world_size = -1;
  // Ranks whose file was found but could not be used (truncated, corrupt,
  // unreadable): rank -> "file: why". They are not "dead".
  std::map<Rank, std::string> unreadable;
  // What happened to the input files.
  struct InputStats {
    // `unplaced`: read, but nothing in it reached the analysis (no dump of
    // a known rank, no device snapshot); not counted as `used`. `empty`: of
    // `skipped`, the files that hold nothing (the text report counts them
    // apart; the JSON document's `skipped` includes them).
    size_t files = 0, used = 0, skipped = 0, unreadable = 0, duplicates = 0, unplaced = 0, empty = 0;
  } inputs;
  // Device-level snapshots and schedules (docs/snapshot-format.md), one per file.
  std::vector<DeviceJob> device;
  // Per input file, what ingest recognised in it (the order of `files`).
  std::vector<FileRead> file_reads;
  // Claims of job-wide reports that no rank can be said to have printed (the
  // Flight Recorder analyzer's text report, a coordinator's report with no
  // rank prefix): events naming global ranks (`ranks`, `ready_ranks`), in
  // file order. The checks that read producers' verdicts read them too.
  std::vector<LogEvent> job_events;

  const RankDump* Find(Rank r) const;
  // True when an input file of rank `r` (by its name, --rank or its
  // content) was read and was not empty, whether or not it gave records: a
  // rank with such a file logged something, even if nothing hangdx reads.
  bool LeftAFile(Rank r) const;
};

// Splits op->profiling_name "backend:op[ meta]" into backend and op (views
// into profiling_name), and for P2P ("send 0->1", "recv 1<-0") the
// group-local self and peer ranks. Unknown shapes leave backend empty and op
// = the whole name. Never fails.
void ParseProfilingName(OpRecord* op);

// Returns the number of elements of `shape` (1 for a scalar shape []), or
// saturates at INT64_MAX on overflow.
int64_t Numel(const Shape& shape);

}  // namespace hangdx::model
