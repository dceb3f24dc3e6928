#include "hangdx/analyze/checks/pg_creation_order.h"

#include <algorithm>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/stalled_pgs.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

Finding NamingFinding(const RankAnalysis& a, const CreationOrderSplit& split) {
  const std::string& desc = split.desc;
  // Sides: the ranks that know `desc` under one pg name. The larger side is
  // the reference; on a tie, the side with the lowest rank.
  std::vector<std::pair<std::string, std::vector<model::Rank>>> sides;
  for (int i : split.instances)
    sides.push_back({a.groups[a.instances.list[i].group].name, a.instances.list[i].arrived});
  std::stable_sort(sides.begin(), sides.end(), [](const auto& x, const auto& y) {
    if (x.second.size() != y.second.size()) return x.second.size() > y.second.size();
    return x.second.front() < y.second.front();
  });
  Finding f;
  f.kind = Kind::kOrderInversion;
  f.severity = Severity::kError;
  f.hang = true;
  f.op = a.LeadOp(a.instances.list[split.instances.front()]).op;
  f.summary = "process groups were created in different orders: pg '" + desc + "' is";
  for (size_t k = 0; k < sides.size(); ++k) {
    f.summary += (k ? (k + 1 == sides.size() ? " and" : ",") : "") + std::string(" pg ") + sides[k].first + " on " +
                 RankWords(sides[k].second);
    f.roles.push_back({"pg " + sides[k].first + " ('" + desc + "')", sides[k].second});
    if (k) f.culprit_ranks.insert(f.culprit_ranks.end(), sides[k].second.begin(), sides[k].second.end());
  }
  f.summary += ", so each side waits in a pg the other side is not using";
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  // Rank-level cycle: the first rank of each side waits for the next side.
  for (const auto& side : sides) f.cycle.push_back(side.second.front());
  std::sort(f.cycle.begin(), f.cycle.end());
  for (int i : split.instances) {
    const Instance& in = a.instances.list[i];
    for (size_t k = 0; k < in.arrived.size(); ++k)
      AddOpEvidence(a, &f, in.arrived[k], a.DumpOf(in, in.arrived[k])->ops[in.ops(k).front()],
                    "pending in pg " + a.groups[in.group].name + " ('" + desc + "') seq " + std::to_string(in.seq));
  }
  f.details.push_back(
      "pg names are creation counters: every rank must call new_group for every group, "
      "in the same order");
  f.fix_hint = "call new_group (and split_group) for all groups in one fixed order on every rank";
  return f;
}

}  // namespace

void PgCreationOrderCheck(const RankAnalysis& a, FindingSink* sink) {
  for (const CreationOrderSplit& split : CreationOrderSplits(a)) sink->Add(NamingFinding(a, split));
}

}  // namespace hangdx::analyze
