// hangdx/ingest/formats/messages/handlers.h
// What each kind of recognized message becomes in the model: one handler
// per event kind of the catalogue (the table in handlers.cc), so that the
// hundreds of rows are data and the code is a dozen functions:
//   timeout   -> a kTimeout LogEvent; with a seq and a pg (c10d's prefix, the
//                `pg` capture, or the status line of the same rank and seq
//                that follows it) also an OpRecord started and not completed
//                (retired, timeout_ms, duration_ms = elapsed), as
//                Flight Recorder would show the stuck op;
//   status    -> RankDump::pg_status (last enqueued / started / completed of
//                the c10d PG ID, 0 without one); a snapshot of other ranks'
//                states (`ready_ranks`: the desync report) -> a kOther event;
//   op        -> an OpRecord scheduled, when it has a seq and a pg;
//   mismatch  -> kMismatch; culprit -> kCulprit (ranks / ready_ranks);
//   stall, peer_lost, crash, exit, abort, heartbeat, config, progress
//             -> LogEvents of those kinds (waited_ms, timeout_ms, peer,
//                peer_addr, exit_code, signal, setting / value);
//   init      -> PgConfig: the default pg's members from `world_size`,
//                self_local from `pg_rank` of a pg with `nranks`;
//   info      -> nothing (recognized only: model::FileRead).
// An exit row's exit_role becomes LogEvent::exit_role. torchrun's failure
// summary lists (2.9+, pytorch#160908) every worker of its agent that did
// not exit 0, the ones the agent stopped too: when it lists a worker the
// agent stopped (its pid in a "Sending process P closing signal" line of the
// file), each local rank of the file's `[defaultL]:` prefixes it omits exited
// 0, and becomes a kExit event of role kEndedInOrder (AddOrderlyEnds), at the
// global rank base + L the summary's entries give (torchrun numbers an
// agent's workers base_global_rank + local_rank).
// Every event carries its row (LogEvent::message_id). A message of no known
// rank is kept (at rank -1, which the loader reports as a file of no known
// rank) only when it names global ranks; otherwise it is counted
// (Unranked) and a diagnostic says so. Caps: 500 events per rank per file; an identical
// event of a rank is kept once.
//
//   Handlers h(&sink);
//   for (const Message& m : messages) h.Handle(m);
//   h.Finish();
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hangdx/ingest/formats/messages/attribution.h"
#include "hangdx/ingest/messages/matcher.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest::messages_format {

// One recognized message and whose it is.
struct Message {
  const messages::MessageMatch* match = nullptr;
  Attribution who;
  int64_t time_ns = 0;  // the line's timestamp (logs::LineTimeNs), 0 none
};

// Turns the messages of one file into records of `out` (which must outlive
// it). Not thread-safe: one per file.
class Handlers {
 public:
  explicit Handlers(RecordSink* out) : out_(out) {}
  // Records `msg` through the handler of its row's event kind.
  void Handle(const Message& msg);
  // Ends the file: what needed later lines (a timeout's pg from the status
  // line after it) is joined and recorded.
  void Finish();
  // Before Finish: the exits torchrun's failure summary implies by leaving a
  // worker out (see the file comment); `facts` are the file's.
  void AddOrderlyEnds(const FileFacts& facts);
  // How many messages of `row` named no rank and were not kept.
  int64_t Unranked(const messages::Row* row) const;

  // The handlers, one per event kind (see the table in handlers.cc).
  void OnTimeout(const Message& m);
  void OnStatus(const Message& m);
  void OnOp(const Message& m);
  void OnInit(const Message& m);
  void OnEvent(const Message& m);  // every kind that is a LogEvent only
  void OnStall(const Message& m);  // a LogEvent, and a rendezvous wait (RecordRendezvous)

 private:
  // A timeout waiting for its pg (the status line may come later).
  struct PendingTimeout {
    const messages::MessageMatch* match;
    Attribution who;
  };
  // Records `e` for `who` (see the file comment); false when it was not kept.
  bool Emit(const Message& m, model::LogEvent e);
  void RecordTimeoutOp(const PendingTimeout& t);
  // A wait at a rendezvous of `world_size` ranks that `count` have reached
  // (c10d's store-based barrier of init_process_group / new_group: a pg
  // named by its store key, of world_size members: its size only, see the
  // .cc) as the rank's op
  // seq 0 of that pg, so the ranks that never reached it are found like
  // those absent from a collective; `timed_out`: the wait ended in a
  // timeout. Once per (rank, pg).
  void RecordRendezvous(const Message& m, bool timed_out);
  // Ranks 0 .. n-1, one list per n shared by every rank that names it (a
  // file of 65,536 ranks each naming a world of 2^20 holds one list, not
  // one a rank). n <= 2^20 (the callers check).
  const model::SharedRanks& WorldRanks(int64_t n);

  RecordSink* out_;
  std::vector<PendingTimeout> timeouts_;
  // (rank, seq) -> the pg its status line names.
  std::map<std::pair<int64_t, int64_t>, Attribution> status_pg_;
  std::map<int64_t, int> events_of_;  // per rank, capped
  std::set<std::tuple<int64_t, int, std::string>> seen_;
  std::set<std::pair<int64_t, std::string>> rendezvous_;  // (rank, pg) recorded by RecordRendezvous
  std::map<int64_t, model::SharedRanks> world_ranks_;     // WorldRanks' lists, by n
  bool warned_rank_range_ = false;                        // a message named a rank past model::kMaxRank
  std::map<const messages::Row*, int64_t> unranked_;
  // torchrun's failure summary: its entries (global rank, local rank, exit
  // code, pid) and the pids its agent sent a closing signal.
  struct SummaryEntry {
    int64_t rank, local_rank, exit_code, pid;
  };
  std::vector<SummaryEntry> summary_;
  std::set<int64_t> stopped_pids_;
  const messages::Row* summary_row_ = nullptr;  // the row of the first entry (the synthesized events' message_id)
};

// The LogEvent a message is, of `kind`: its text, file and line, time, row,
// pg, seq, op and what else it names (ranks, peer, waited_ms = elapsed,
// timeout, exit code, signal, setting).
model::LogEvent MakeEvent(const Message& m, model::LogEvent::Kind kind, const std::string& file);

}  // namespace hangdx::ingest::messages_format
