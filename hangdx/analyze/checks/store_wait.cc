#include "hangdx/analyze/checks/store_wait.h"

#include <map>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::LogEvent;
using model::Rank;

namespace {

// The rows whose `peer` is the rank whose store key was never set. Only
// these: a store wait elsewhere (a barrier key, an NCCL unique id) names no
// rank, or has rows and checks of its own.
bool IsConnectWait(const LogEvent& e) {
  return e.kind == LogEvent::Kind::kTimeout && e.peer >= 0 && e.message_id == "torch.gloo.connect_wait_timeout";
}

struct PgWait {
  std::vector<Rank> waiters;  // global ranks that logged the wait, in dump order
  std::set<Rank> awaited;     // the keys' ranks
  bool pg_local = false;      // awaited counts inside the pg
  std::vector<Evidence> lines;
};

std::string PgWords(const std::string& pg) {
  return pg == "0" ? "the default pg (init_process_group)" : "pg " + pg + " (new_group)";
}

Finding Describe(const std::string& pg, const PgWait& w, const std::vector<Rank>& culprits) {
  Finding f;
  f.kind = Kind::kMissingRank;
  f.severity = Severity::kError;
  f.hang = true;
  f.pg_name = pg;
  f.op = pg == "0" ? "init_process_group" : "new_group";
  f.culprit_ranks = culprits;
  f.ranks_are_pg_local = w.pg_local;
  std::string who = RankWords(culprits) + (w.pg_local ? " of pg " + pg + " (ranks inside the pg; which global " +
                                                            Verb(culprits, "rank it is", "ranks they are") +
                                                            " no file says)"
                                                      : "");
  f.roles.push_back({"waited for its address", w.waiters});
  f.roles.push_back({"never reached the pg's creation", culprits});
  f.summary = RankWords(w.waiters) + " timed out creating " + PgWords(pg) + ": " +
              Verb(w.waiters, "it", "they") + " waited in the store for the gloo address of " + who +
              ", which was never set: " + Verb(culprits, "it", "they") + " never reached " + f.op +
              " (started late, hung or died before it)";
  f.details.push_back(
      "gloo connects a pg's members through the store: each sets the key of its own rank and waits for the "
      "others'; the key a waiter timed out on names the member that never arrived");
  f.evidence = w.lines;
  std::string whom = RankWords(culprits) + (w.pg_local ? " of pg " + pg : "");
  f.fix_hint = "look at what " + whom + " did before " + f.op +
               ": a crash, a slow start (data loading, a download), or a rank-dependent branch that skips it; the "
               "waiters' timeouts are its consequence";
  return f;
}

}  // namespace

void StoreWaitCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<std::string, PgWait> by_pg;
  for (const auto& d : a.job.dumps) {
    if (d.rank < 0) continue;
    for (const auto& e : d.events) {
      if (!IsConnectWait(e)) continue;
      PgWait& w = by_pg[e.pg];
      if (w.waiters.empty() || w.waiters.back() != d.rank) w.waiters.push_back(d.rank);
      w.awaited.insert(e.peer);
      w.pg_local = w.pg_local || e.ranks_pg_local;
      if (w.lines.size() < kEvidencePerSide)
        w.lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
  }
  for (auto& [pg, w] : by_pg) {
    std::vector<Rank> culprits;
    std::set<Rank> waiters(w.waiters.begin(), w.waiters.end());
    // A waiter is alive and in the pg's creation; in pg-local numbering the
    // waiters' own numbers are unknown, so nothing is taken out.
    for (Rank r : w.awaited)
      if (w.pg_local || !waiters.count(r)) culprits.push_back(r);
    if (culprits.empty()) continue;
    sink->Add(Describe(pg, w, culprits));
  }
}

}  // namespace hangdx::analyze
