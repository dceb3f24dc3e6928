// hangdx/live/progress.h
// What the cheap progress probe reads from a worker: per process group,
// the last enqueued / started / completed collective. Torch writes them as
// "pg_status" of the Flight Recorder JSON (FlightRecorder::getPgStatusJson,
// torch/csrc/distributed/c10d/FlightRecorderDetail.hpp: per pg id, the
// three counters as decimal strings), beside "pg_config" (per pg name: its
// desc and its ranks as the string "[0, 1, 2]") and, unless
// includecollectives=false (NCCL only), "entries".
//
//   StatusOr<Progress> p = ParseProgress(body, /*with_members=*/true);
//   p->pgs[0].pg == "0", p->pgs[0].enqueued == 12, p->pgs[0].completed == 11
//
// Only the top-level keys wanted are parsed; the rest (the entries, a rank
// list of 100,000 numbers) is skipped over without building anything, so a
// probe of a 10,000-rank job costs a scan of its bytes, not a parse.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/job.h"

namespace hangdx::live {

using model::Rank;

// One pg's counters as a rank reports them. gloo counts op ids (which also
// advance for P2P ops it does not record); NCCL counts collective seqs.
// started is -1 unless the backend times ops (gloo never does).
struct PgProgress {
  std::string pg;  // the pg id, the key of pg_status ("0", "1", ...)
  int64_t enqueued = -1, started = -1, completed = -1;

  // Some op of this pg was enqueued and has not completed.
  bool Unfinished() const { return enqueued > completed; }
  bool operator==(const PgProgress&) const = default;
  auto operator<=>(const PgProgress&) const = default;  // by pg, then the counters
};

struct Progress {
  std::vector<PgProgress> pgs;  // sorted by pg id
  // pg name -> its member ranks, from pg_config (parsed when asked for);
  // gloo keys its default pg "" and lists no members once new_group ran.
  std::map<std::string, std::vector<Rank>> members;
  std::string version;  // the dump's "version", e.g. "2.10"
};

// Reads pg_status (and, with `with_members`, pg_config) of a Flight
// Recorder JSON dump, in one pass over its top level; `config_text`, when
// given, receives pg_config's raw text (to tell a list seen before without
// parsing it). Errors (kDataLoss): not a JSON object, or no readable
// pg_status; counters that are not integers are skipped.
StatusOr<Progress> ParseProgress(std::string_view fr_json, bool with_members, std::string_view* config_text = nullptr);

// pg name -> member ranks of a pg_config object's raw text (pgs whose
// "ranks" is not a list of ranks are left out).
std::map<std::string, std::vector<Rank>> ParseMembers(std::string_view config);

// The value of top-level key `key` of the JSON object `json`, as its raw
// text (found by skipping over the other values, not parsing them); ""
// when the key is absent or `json` is not an object.
std::string_view TopLevelValue(std::string_view json, std::string_view key);

// "0=12/11,1=5/5": each pg's enqueued/completed, the compact form agents
// write into Redis (a few bytes per pg and rank). Parse returns false on
// a malformed string.
std::string FormatCompact(const std::vector<PgProgress>& pgs);
bool ParseCompact(std::string_view text, std::vector<PgProgress>* pgs);

}  // namespace hangdx::live
