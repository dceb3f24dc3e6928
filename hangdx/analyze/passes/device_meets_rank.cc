#include "hangdx/analyze/passes/device_meets_rank.h"

#include <algorithm>

namespace hangdx::analyze {

bool DeviceReplaces(const Finding& f, const Finding& g) {
  return f.hang && g.hang && !f.culprit_ranks.empty() && g.culprit_ranks == f.culprit_ranks && !g.ranks_are_pg_local &&
         (g.kind == Kind::kMissingRank || g.kind == Kind::kCrashedRank || g.kind == Kind::kUndecided) &&
         (f.kind == Kind::kMissingRank || f.kind == Kind::kCrashedRank);
}

void DeviceMeetsRankPass(const RankAnalysis&, FindingSink* sink, Diagnosis* out) {
  auto& entries = sink->entries();
  for (Scope scope : {Scope::kWaitState, Scope::kHistory})
    for (auto& e : entries)
      if (e.scope == scope) out->findings.push_back(std::move(e.finding));
  for (auto& e : entries) {
    if (e.scope != Scope::kDevice) continue;
    auto same = std::find_if(out->findings.begin(), out->findings.end(),
                             [&](const Finding& g) { return DeviceReplaces(e.finding, g); });
    if (same != out->findings.end())
      *same = std::move(e.finding);
    else
      out->findings.push_back(std::move(e.finding));
  }
  entries.clear();
  out->edges = std::move(sink->device_edges);
  out->ranks = std::move(sink->device_ranks);
}

}  // namespace hangdx::analyze
