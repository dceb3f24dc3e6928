#include "hangdx/analyze/checks/stalled_pgs.h"

#include <set>

#include "hangdx/analyze/match.h"

namespace hangdx::analyze {

namespace {

// True when the rank's logs say one of its ops failed or it went down.
bool LoggedAFailure(const model::RankDump& d) {
  using K = model::LogEvent::Kind;
  for (const auto& e : d.events)
    if (e.kind == K::kTimeout || e.kind == K::kPeerLost || e.kind == K::kAbort || e.kind == K::kCrash) return true;
  return false;
}

}  // namespace

bool EndedByAMember(const RankAnalysis& a, const Instance& in) {
  for (size_t k = 0; k < in.arrived.size(); ++k) {
    const model::OpRecord& op = a.OpAt(in, k);
    if (!op.completed || KindUnknown(op)) continue;
    const model::RankDump* d = a.job.Find(in.arrived[k]);
    if (d && !LoggedAFailure(*d)) return true;
  }
  return false;
}

std::map<int, int> FirstStalledInstances(const RankAnalysis& a) {
  std::map<int, int> first;
  for (int i = 0; i < static_cast<int>(a.instances.list.size()); ++i) {
    const Instance& in = a.instances.list[i];
    int node = a.graph.InstanceNode(i);
    if (in.problem() || !in.any_pending || (node >= 0 && a.graph.dead(node))) continue;
    if (EndedByAMember(a, in)) continue;
    first.try_emplace(in.group, i);
  }
  return first;
}

namespace {

// True when some rank knows two of these pgs (two communicators a log parser
// described alike): not a creation-order problem.
bool SomeRankInTwo(const RankAnalysis& a, const std::vector<int>& list) {
  std::map<model::Rank, const std::string*> name_of;
  for (int i : list)
    for (model::Rank r : a.instances.list[i].arrived) {
      const std::string* n = &a.groups[a.instances.list[i].group].name;
      auto [it, fresh] = name_of.emplace(r, n);
      if (!fresh && *it->second != *n) return true;
    }
  return false;
}

}  // namespace

std::vector<CreationOrderSplit> CreationOrderSplits(const RankAnalysis& a) {
  // pg descriptions set by the user name one logical group: if a desc is a
  // different pg name on different ranks, new_group was called in a
  // different order there, and each side waits in a pg the other does not use.
  std::map<std::string, std::vector<int>> by_desc;
  for (const auto& [gi, i] : FirstStalledInstances(a)) {
    const std::string& desc = a.groups[gi].desc;
    if (UserDescription(desc)) by_desc[desc].push_back(i);
  }
  std::vector<CreationOrderSplit> out;
  for (auto& [desc, list] : by_desc) {
    std::set<std::string> names;
    for (int i : list) names.insert(a.groups[a.instances.list[i].group].name);
    if (names.size() < 2 || SomeRankInTwo(a, list)) continue;
    out.push_back({desc, std::move(list)});
  }
  return out;
}

}  // namespace hangdx::analyze
