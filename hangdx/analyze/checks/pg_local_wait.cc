#include "hangdx/analyze/checks/pg_local_wait.h"

#include <map>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

void PgLocalWaitCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<std::pair<std::string, std::vector<Rank>>, std::vector<Rank>> waits;  // (pg, awaited) -> waiters
  for (const auto& d : a.job.dumps)
    if (d.wait && d.wait->pg_local && !d.wait->waiting_for.empty())
      waits[{d.wait->pg, d.wait->waiting_for}].push_back(d.rank);
  for (const auto& [key, waiters] : waits) {
    const auto& [pg, awaited] = key;
    Finding f;
    f.kind = Kind::kMissingRank;
    f.severity = Severity::kError;
    f.hang = true;
    f.pg_name = pg;
    f.culprit_ranks = awaited;
    f.ranks_are_pg_local = true;
    const auto& w = *a.job.Find(waiters.front())->wait;
    f.op = w.current_op;
    f.seq = w.op_seq;
    f.roles.push_back({"waiting (global ranks)", waiters});
    f.roles.push_back({"awaited (ranks in pg " + pg + ")", awaited});
    f.summary = RankWords(waiters) + " " + Verb(waiters, "waits", "wait") + " in " + w.current_op + " of pg " + pg +
                " for " + RankWords(awaited) + " of that pg (a rank inside the pg; " +
                "its global rank is not in these files), which never arrived";
    for (Rank r : waiters)
      for (const auto& e : a.job.Find(r)->events)
        if (e.kind == model::LogEvent::Kind::kTimeout)
          f.evidence.push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message});
    f.details.push_back("the awaited rank may itself be waiting on another: get its log too");
    f.fix_hint = "find what the awaited rank of the group is doing (still compiling, in another collective, dead)";
    sink->Add(std::move(f));
  }
}

}  // namespace hangdx::analyze
