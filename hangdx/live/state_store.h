// hangdx/live/state_store.h
// Where `hangdx watch` keeps what it must not lose: each rank's last
// progress (compact counters, when they last changed, when the rank last
// answered), the probe history, the reports ranks pushed, the findings
// and the stalls already analysed. MemoryStore is the embedded default;
// RedisStore (redis_store.h, --redis URL) keeps the same in Redis so that
// a watch killed with SIGKILL and restarted resumes: no acknowledged
// report lost, no finding repeated. Agents (--role agent) write the rank
// records of their node into it; the coordinator reads them.
//
//   std::unique_ptr<StateStore> s = NewMemoryStore({});
//   HANGDX_RETURN_IF_ERROR(s->PutRanks({{.rank = 3, .progress = "0=12/11", ...}}));
//   StatusOr<bool> fresh = s->AddFinding("missing_rank pg 0 seq 4 [3]", json);
//
// Implementations are thread-safe. Errors are kIo (the backend failed).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/job.h"

namespace hangdx::live {

using model::Rank;

// A rank's last known state. Times are wall-clock Unix milliseconds, so
// that a restarted process (or the coordinator) can use them.
struct RankRecord {
  Rank rank = -1;
  std::string url;       // worker address; "" for a rank that only pushes
  std::string progress;  // FormatCompact: "0=12/11,1=5/5"
  int64_t seen_ms = 0;   // last answer (probe reply or push); 0: never
  int64_t changed_ms = 0;
  std::string agent;  // the agent that polls it; "" for a standalone watch
  // Its counters are collective seqs (probed through NCCL's dump), so a
  // coordinator may take a first look from them (first_look.h).
  bool collectives = false;

  // "url\tprogress\tseen\tchanged\tagent", then "\tc" when `collectives`
  // (no field holds a tab; a record of 5 fields, as older watches wrote,
  // decodes with `collectives` false).
  std::string Encode() const;
  static bool Decode(Rank rank, const std::string& text, RankRecord* out);
};

struct StoreOptions {
  std::string job = "default";    // namespaces the keys: several jobs can share one Redis
  size_t history_max = 2000;      // probe-history lines kept
  size_t reports_per_rank = 256;  // pushed reports kept per rank (older ones fall off, as in the ring)
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  // "memory", "redis 127.0.0.1:6379 (job default)".
  virtual std::string Describe() const = 0;

  virtual Status PutRanks(const std::vector<RankRecord>& records) = 0;
  virtual StatusOr<std::vector<RankRecord>> LoadRanks() = 0;  // by rank

  // One JSON line per probe round or stall (oldest first when loaded).
  virtual Status AppendHistory(const std::string& line) = 0;
  virtual StatusOr<std::vector<std::string>> LoadHistory() = 0;

  // A report a rank pushed, stored before it is acknowledged, with the
  // rank's record after it (as PutRanks) when `record` is given: both in
  // one write, so that a pushed report costs one Redis round trip, and the
  // writes of reports arriving on other threads at the same time share it
  // (RedisStore). Returns once the store holds both.
  virtual Status AppendReport(Rank rank, const std::string& report, const std::optional<RankRecord>& record) = 0;
  virtual StatusOr<std::vector<std::pair<Rank, std::string>>> LoadReports() = 0;  // per rank, oldest first

  // Records a finding under `fingerprint`; false when it was there already.
  virtual StatusOr<bool> AddFinding(const std::string& fingerprint, const std::string& record) = 0;
  virtual StatusOr<std::vector<std::string>> LoadFindings() = 0;  // in the order added

  // Marks a stall episode analysed; false when it was already.
  virtual StatusOr<bool> MarkStall(const std::string& key) = 0;
  virtual StatusOr<std::vector<std::string>> LoadStalls() = 0;
};

std::unique_ptr<StateStore> NewMemoryStore(const StoreOptions& options);

}  // namespace hangdx::live
