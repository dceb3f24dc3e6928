#include "hangdx/analyze/passes/unnamed_crash.h"

#include <set>

#include "hangdx/analyze/checks/crashed_rank.h"
#include "hangdx/analyze/checks/reported_mismatch.h"

namespace hangdx::analyze {

void UnnamedCrashPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  std::set<model::Rank> named;
  for (const auto& e : sink->entries())
    if (e.scope == Scope::kWaitState) named.insert(e.finding.culprit_ranks.begin(), e.finding.culprit_ranks.end());
  std::vector<model::Rank> unnamed;
  for (const auto& d : a.job.dumps)
    if (a.Crashed(d.rank) && !named.count(d.rank) && !ReportedAMismatch(a.job, d.rank)) unnamed.push_back(d.rank);
  if (unnamed.empty()) return;
  sink->Begin("unnamed_crash", Scope::kWaitState);
  sink->Add(CrashedRankFinding(a, unnamed, nullptr));
}

}  // namespace hangdx::analyze
