// hangdx/live/push.h
// Reports that ranks push to `hangdx watch --listen` (for jobs without
// torch's debug server): POST /v1/report with one JSON document, either
//
//   {"hangdx_report": 1, "rank": 3, "pid": 4242, "seq": 17, "world_size": 8,
//    "fr": {"version": "2.10", "pg_config": {...}, "pg_status": {...},
//           "entries": [ ...Flight Recorder entries not sent before... ]},
//    "wait": {"current_op": "all_reduce", "waiting_for_ranks": [5], "op_seq": 41},
//    "stacks": "Thread 0x... (most recent call first):\n  File ..."}
//
// where every part but "rank" is optional (a report with none is a
// heartbeat; hangdx.torch.watch() sends "fr" deltas, and "stacks" when
// asked), or a wait snapshot {"<rank>": {"current_op", "waiting_for_ranks",
// "op_seq"}, ...} as docs/snapshot-format.md describes. "seq" numbers a
// process's reports: one seen before is acknowledged again and not applied
// twice (a client resends what was not acknowledged).
//
// PushBoard keeps, per rank, what the reports add up to: the Flight
// Recorder entries by record_id (the last `max_entries`), the latest
// pg_config / pg_status / version, the latest wait state and stacks, and
// turns them back into one Flight Recorder JSON dump per rank for the
// evidence bundle. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/live/progress.h"

namespace hangdx::live {

// One report, checked and split into its parts (ParseReport).
struct PushReport {
  Rank rank = -1;
  int64_t pid = -1, seq = -1;
  int64_t world_size = -1;           // the sender's world size, -1 when not sent
  std::optional<nlohmann::json> fr;  // the "fr" object
  std::optional<nlohmann::json> wait;
  std::optional<std::string> stacks;
};

// Checks a report body. Returns one report per rank (a wait snapshot can
// hold several). Errors (kInvalidArgument, the message says what is
// wrong): not JSON, not an object, a rank outside 0..16777215, parts of
// the wrong type, more than `max_entries` entries.
StatusOr<std::vector<PushReport>> ParseReport(std::string_view body, size_t max_entries);

class PushBoard {
 public:
  explicit PushBoard(size_t max_entries = 4096) : max_entries_(max_entries) {}

  // Applies a report; returns false when it was seen before (same pid and
  // a seq not above the last one applied).
  bool Apply(const PushReport& r);
  // The counters of `rank`'s last pg_status, or of its wait state (as pg
  // "wait:<pg>": enqueued op_seq, completed op_seq - 1 while it waits).
  std::vector<PgProgress> ProgressOf(Rank rank) const;
  // Member ranks by pg name, from the pushed pg_config.
  std::map<std::string, std::vector<Rank>> MembersOf(Rank rank) const;

  std::vector<Rank> Ranks() const;
  // The rank's Flight Recorder JSON, rebuilt ("" when it pushed none).
  std::string FrJson(Rank rank) const;
  std::string Stacks(Rank rank) const;
  // True when `rank`'s pg_status counters are collective seqs, as far as
  // its reports show: it pushed entries, none of them a P2P op, and its
  // last entry's collective_seq_id is its pg's last enqueued counter. Then
  // its counters can stand in for its records in a first look
  // (first_look.h); gloo counts op ids, P2P ops included, which no entry's
  // collective seq matches once a P2P op ran.
  bool CountsCollectives(Rank rank) const;
  // The wait snapshot of every rank that pushed a wait state ("" if none).
  std::string WaitSnapshot() const;
  size_t entries(Rank rank) const;

  // Ranks asked to send their stacks with their next report.
  void WantStacks(const std::vector<Rank>& ranks);
  bool Wants(Rank rank) const;

 private:
  struct RankBoard {
    std::map<int64_t, nlohmann::json> entries;  // by record_id
    nlohmann::json pg_config, pg_status;
    std::string version = "2.10";
    std::optional<nlohmann::json> wait;
    std::string stacks;
    std::map<int64_t, int64_t> last_seq;  // pid -> last seq applied
    bool p2p = false;                     // some entry applied was a P2P op
    bool want_stacks = false;
  };

  size_t max_entries_;
  mutable std::mutex mu_;
  std::map<Rank, RankBoard> ranks_;
};

}  // namespace hangdx::live
