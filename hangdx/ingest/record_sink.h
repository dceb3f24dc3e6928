// hangdx/ingest/record_sink.h
// RecordSink: where a format's parser puts what it reads, one record at a
// time. Every parser writes into this one interface (see formats.h), so
// what is done with the records (today: build model::RankDumps, see
// DumpBuilder; later: reduce them to a compact per-(pg, seq) form while
// parsing) can change without touching a parser.
//
// Two kinds of record:
//   - records that grow with the input (ops, frames, stacks, log events,
//     device task reports) are streamed: added, never read back;
//   - per-rank and per-pg state (pg configs, pg statuses, the live wait,
//     the dump's versions) is keyed, small, and may be looked up and
//     updated while parsing.
// Records name a global rank; -1 collects what belongs to no known rank
// (the loader reports and drops it). Diagnostics go to the sink's
// model::DiagnosticSink, named after the file.
//
//   model::DiagnosticSink diags;
//   DumpBuilder out("rank_3.log", &diags);
//   model::OpRecord op;
//   op.pg_name = out.Strings(3).Str("0");
//   op.collective_seq = 41;
//   out.AddOp(3, op);
//   std::vector<model::RankDump> dumps = out.Finish().dumps;
//
// Not thread-safe: one sink per file being parsed.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hangdx/model/device.h"
#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/history.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// The interface every format's parse function writes into (see above).
// Implementations decide what is kept; a parser only adds and updates.
class RecordSink {
 public:
  virtual ~RecordSink() = default;

  // The file being read (as the user named it).
  virtual const std::string& file() const = 0;
  // Records a data problem of this file at byte `offset` (-1: none) about
  // `rank` (-1: none), under model::DiagnosticSink's policy (repeats
  // counted, a cap per file).
  virtual void Diag(model::Diagnostic::Severity severity, std::string message, model::Rank rank = -1,
                    int64_t offset = -1) = 0;

  // ---- Streamed records. -----------------------------------------------
  // The interner that the strings and shared values (shapes, dtypes,
  // stacks) of `rank`'s records must come from. Valid for the sink's life.
  virtual model::Interner& Strings(model::Rank rank) = 0;
  // Appends one op of `rank`, in recording order; its views and Refs come
  // from Strings(rank), its frame indices from AddFrame(rank, ...).
  virtual void AddOp(model::Rank rank, const model::OpRecord& op) = 0;
  // Says that about `n` more ops of `rank` follow, so that the sink can
  // make room once (a 1 GB NCCL log gives 9 million: growing by doubling
  // held up to three times their memory while it copied). A hint only.
  virtual void ReserveOps(model::Rank rank, size_t n) {}
  // Says that the ops of `rank` about to be added are final as added (a
  // log's records: no later record changes whether one completed, as
  // DeriveCompletion does for a Flight Recorder dump's), so that the sink
  // may reduce them as they come instead of holding them all (a 10 GB
  // NCCL log gives 85 million). Call before the rank's first AddOp. A hint.
  virtual void StreamOps(model::Rank rank) {}
  // Says that the ops of `rank` about to be added are a Flight Recorder
  // dump's (state, retired and pg_status as recorded: see
  // SetFromFlightRecorder), so that the sink may cut them as they come, as
  // CompactDump would once the file ended, instead of holding every entry.
  // Call before the rank's first AddOp. A hint.
  virtual void StreamFlightRecorderOps(model::Rank rank) {}
  // How many ops of `rank` this file has given so far (log parsers number
  // their records with it: OpRecord::record_id).
  virtual size_t OpCount(model::Rank rank) const = 0;
  // Appends a stack frame to `rank`'s frame table; returns its index, for
  // an OpRecord::frames stack.
  virtual uint32_t AddFrame(model::Rank rank, model::Frame frame) = 0;
  // Append a stack sample, a log event, a stuck or failed device task of
  // `rank` (RankDump::stacks, events, device_tasks), in the file's order.
  virtual void AddStack(model::Rank rank, model::StackSample stack) = 0;
  virtual void AddEvent(model::Rank rank, model::LogEvent event) = 0;
  virtual void AddDeviceTask(model::Rank rank, model::DeviceTaskReport task) = 0;
  // A device-level schedule or snapshot read from this file.
  virtual void AddDeviceJob(model::DeviceJob job) = 0;

  // ---- Keyed state. ----------------------------------------------------
  // Makes `rank` one of the ranks this file speaks about, even when no
  // record follows (a process whose log holds only its Init lines ran).
  virtual void NoteRank(model::Rank rank) = 0;
  // `rank`'s records come from a Flight Recorder dump (sets
  // RankDump::from_flight_recorder). The sink then derives each op's
  // `completed` from its recorded state when the file ends (DeriveCompletion
  // in completion.h): a parser of such a dump sets state, retired and
  // pg_status as recorded, not `completed`.
  virtual void SetFromFlightRecorder(model::Rank rank) = 0;
  // The dump's Flight Recorder version ("2.10") and communication library
  // version ("2.21.5"); replace what was set before.
  virtual void SetVersion(model::Rank rank, std::string version) = 0;
  virtual void SetCommLibVersion(model::Rank rank, std::string version) = 0;
  // `rank`'s config of the pg it knows as `key` (RankDump::pg_config),
  // created empty with name = `key` on first use.
  virtual model::PgConfig& PgConfig(model::Rank rank, const std::string& key) = 0;
  // The same, or nullptr when `rank` has no config under `key` yet.
  virtual const model::PgConfig* FindPgConfig(model::Rank rank, std::string_view key) const = 0;
  // `rank`'s status of the pg with process-local id `pg_id`
  // (RankDump::pg_status), created as "nothing seen" (-1s) on first use.
  virtual model::PgStatus& PgStatus(model::Rank rank, int64_t pg_id) = 0;
  // `rank`'s live wait (replaces one set before).
  virtual void SetWait(model::Rank rank, model::WaitSnapshot wait) = 0;
  // The file held `rank`'s records but could not be read: the rank is not
  // dead, its data is lost (model::Job::unreadable).
  virtual void MarkUnreadable(model::Rank rank) = 0;

  // What ingest makes of this file (model::FileRead): the formats that read
  // it, the messages recognised in it (the messages format), what it resembles.
  virtual model::FileRead& Reading() = 0;

  // True while nothing but diagnostics was recorded (no rank, no device job).
  virtual bool empty() const = 0;
};

// The RecordSink the loader uses today: builds one model::RankDump per rank
// (file = the file read) and keeps the device jobs. Records of a rank out
// of range (below -1, or model::kMaxRank and up: a garbled "[Rank N]") are
// dropped, with one warning per file, so that no parser can make the
// analysis allocate per rank up to a number no job has.
class DumpBuilder final : public RecordSink {
 public:
  // What one file yielded.
  struct Result {
    std::vector<model::RankDump> dumps;    // by rank, rank -1 first when present
    std::vector<model::DeviceJob> device;  // in the order added
    model::Rank unreadable_rank = -1;      // MarkUnreadable's rank, -1 if none
    model::FileRead read;                  // what was recognized (file = the file)
  };

  // How the ops of ranks a parser streams (StreamOps) are cut as they
  // come: the dump gets a history of every op (RankDump::history) and
  // holds only some records (RankDump::ops, op_pos), as ingest/compact.h's
  // CompactDump leaves a Flight Recorder dump; ReadBack re-reads the rest.
  struct StreamCut {
    bool on = false;  // off: every record is held, as for other ranks
    // Per pg: the collectives added first and last that are held (the
    // first pending op of a partial view, and where the ranks stop: a log
    // of a hung job is mostly a few ops ahead of another's, and a record
    // held costs less than reading the file back).
    size_t head = 4, tail = 64;
    // Positions (ascending) of rank `keep_rank`'s ops held as well: the
    // records ReadBack reads back.
    model::Rank keep_rank = -1;
    std::vector<uint32_t> keep;
    // A Flight Recorder dump's cut (StreamFlightRecorderOps): CompactOptions::tail.
    int fr_tail = 4;
  };

  // Records of `file`; diagnostics go to *diags, which must outlive this.
  DumpBuilder(std::string file, model::DiagnosticSink* diags) : file_(std::move(file)), diags_(diags) {}
  // The same, cutting streamed ranks' ops as `cut` says.
  DumpBuilder(std::string file, model::DiagnosticSink* diags, StreamCut cut)
      : file_(std::move(file)), diags_(diags), cut_(std::move(cut)) {}

  // RecordSink, as documented there: each record lands in its rank's dump.

  const std::string& file() const override { return file_; }
  void Diag(model::Diagnostic::Severity severity, std::string message, model::Rank rank = -1,
            int64_t offset = -1) override;
  model::Interner& Strings(model::Rank rank) override { return *Dump(rank).interner; }
  void AddOp(model::Rank rank, const model::OpRecord& op) override;
  void ReserveOps(model::Rank rank, size_t n) override;
  void StreamOps(model::Rank rank) override;
  void StreamFlightRecorderOps(model::Rank rank) override;
  size_t OpCount(model::Rank rank) const override;
  uint32_t AddFrame(model::Rank rank, model::Frame frame) override;
  void AddStack(model::Rank rank, model::StackSample stack) override { Dump(rank).stacks.push_back(std::move(stack)); }
  void AddEvent(model::Rank rank, model::LogEvent event) override { Dump(rank).events.push_back(std::move(event)); }
  void AddDeviceTask(model::Rank rank, model::DeviceTaskReport task) override {
    Dump(rank).device_tasks.push_back(std::move(task));
  }
  void AddDeviceJob(model::DeviceJob job) override { device_.push_back(std::move(job)); }
  void NoteRank(model::Rank rank) override { Dump(rank); }
  void SetFromFlightRecorder(model::Rank rank) override { Dump(rank).from_flight_recorder = true; }
  void SetVersion(model::Rank rank, std::string version) override { Dump(rank).version = std::move(version); }
  void SetCommLibVersion(model::Rank rank, std::string version) override {
    Dump(rank).comm_lib_version = std::move(version);
  }
  model::PgConfig& PgConfig(model::Rank rank, const std::string& key) override;
  const model::PgConfig* FindPgConfig(model::Rank rank, std::string_view key) const override;
  model::PgStatus& PgStatus(model::Rank rank, int64_t pg_id) override { return Dump(rank).pg_status[pg_id]; }
  void SetWait(model::Rank rank, model::WaitSnapshot wait) override { Dump(rank).wait = std::move(wait); }
  void MarkUnreadable(model::Rank rank) override { unreadable_rank_ = rank; }
  model::FileRead& Reading() override { return read_; }
  bool empty() const override { return dumps_.empty() && device_.empty(); }

  // Ends the file: derives completion of the ops of Flight Recorder dumps
  // (DeriveCompletion), cuts streamed ranks' (StreamCut) and returns what
  // was recorded. The builder is left empty.
  Result Finish();

 private:
  // A streamed rank's ops so far: the history of all, the records held.
  struct Streamed {
    model::OpHistory::Builder history;
    std::vector<model::OpRecord> held;  // in order: not collectives, the heads, `keep`
    std::vector<uint32_t> held_pos;
    std::vector<size_t> head;                                            // per history pg: collectives held as heads
    std::vector<std::deque<std::pair<uint32_t, model::OpRecord>>> tail;  // per history pg: its last collectives
    size_t next_keep = 0;                                                // index into StreamCut::keep
  };
  // A Flight Recorder rank's ops so far (StreamFlightRecorderOps): those
  // whose completion is settled went into the history, and are held only
  // as CompactDump would hold them; from the first op that is not settled
  // on (not completed, by its state or by a later completed op of its pg:
  // pg_status is read when the file ends), every op waits in `pending`.
  struct FrStream {
    model::OpHistory::Builder history;
    std::vector<std::pair<uint32_t, model::OpRecord>> held;              // CompactDump's "always": in order
    std::vector<std::deque<std::pair<uint32_t, model::OpRecord>>> tail;  // per history pg: its highest seqs
    std::vector<int64_t> last_seq;                                       // per history pg: highest collective seq
    std::deque<model::OpRecord> pending;
    uint32_t pending_pos = 0;  // position of pending.front()
    // Per pg name: positions of pending non-gloo ops not completed (a later
    // completed op of the pg completes them).
    std::unordered_map<std::string_view, std::vector<uint32_t>> open;
    std::optional<std::pair<uint32_t, model::OpRecord>> last, last_completed;
    size_t next_keep = 0;  // index into StreamCut::keep
  };
  model::RankDump& Dump(model::Rank rank);
  void AddStreamed(Streamed* s, model::Rank rank, const model::OpRecord& op);
  static void EndStream(Streamed* s, model::RankDump* d);
  void AddFr(FrStream* s, model::Rank rank, const model::OpRecord& op);
  void SettleFr(FrStream* s, model::Rank rank, bool all);
  void EndFr(FrStream* s, model::RankDump* d);

  std::string file_;
  model::DiagnosticSink* diags_;
  std::map<model::Rank, model::RankDump> dumps_;
  std::vector<model::DeviceJob> device_;
  model::Rank unreadable_rank_ = -1;
  model::FileRead read_;
  model::RankDump discard_;  // the records of ranks out of range (Dump)
  bool out_of_range_warned_ = false;
  StreamCut cut_;
  std::map<model::Rank, Streamed> streams_;
  std::map<model::Rank, FrStream> fr_streams_;
};

}  // namespace hangdx::ingest
