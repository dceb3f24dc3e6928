#include "hangdx/analyze/checks/absent_ranks.h"

#include <algorithm>

namespace hangdx::analyze {

AbsentRanks ClassifyAbsent(const RankAnalysis& a, const Instance& in) {
  AbsentRanks r;
  for (model::Rank x : in.not_reached) {
    RankNodeType t = a.BlockingType(x);
    (t == RankNodeType::kIdle ? r.idle : t == RankNodeType::kNoDump ? r.dead : r.cascade).push_back(x);
  }
  r.dead.insert(r.dead.end(), in.no_dump.begin(), in.no_dump.end());
  std::sort(r.dead.begin(), r.dead.end());
  for (model::Rank x : r.dead) {
    if (a.job.unreadable.count(x)) r.unreadable.push_back(x);
    if (a.Crashed(x)) r.crashed.push_back(x);
  }
  if (r.idle.empty() && r.dead.empty())
    r.cause = AbsentRanks::Cause::kNone;  // a cascade: reported at its root
  else if (!r.unreadable.empty() && r.idle.empty())
    r.cause = AbsentRanks::Cause::kUnreadable;
  else if (!r.crashed.empty())
    r.cause = AbsentRanks::Cause::kCrashed;
  else
    r.cause = AbsentRanks::Cause::kAbsent;
  return r;
}

void ForEachAbsent(const RankAnalysis& a, AbsentRanks::Cause cause,
                   const std::function<void(const Instance&, AbsentRanks)>& fn) {
  for (int i = 0; i < static_cast<int>(a.instances.list.size()); ++i) {
    const Instance& in = a.instances.list[i];
    if (!a.IsRoot(i) || in.mismatch) continue;
    AbsentRanks absent = ClassifyAbsent(a, in);
    if (absent.cause == cause) fn(in, std::move(absent));
  }
}

}  // namespace hangdx::analyze
