#include "hangdx/analyze/passes/device_meets_rank.h"

#include <map>
#include <set>

#include "hangdx/analyze/work.h"

namespace hangdx::analyze {

namespace {

// The rank-level side of the rule: a finding a device finding may replace.
bool Replaceable(const Finding& g) {
  return g.hang && !g.culprit_ranks.empty() && !g.ranks_are_pg_local &&
         (g.kind == Kind::kMissingRank || g.kind == Kind::kCrashedRank || g.kind == Kind::kUndecided);
}

// The device side.
bool Replaces(const Finding& f) { return f.hang && (f.kind == Kind::kMissingRank || f.kind == Kind::kCrashedRank); }

}  // namespace

bool DeviceReplaces(const Finding& f, const Finding& g) {
  return Replaces(f) && Replaceable(g) && g.culprit_ranks == f.culprit_ranks;
}

void DeviceMeetsRankPass(const RankAnalysis&, FindingSink* sink, Diagnosis* out) {
  auto& entries = sink->entries();
  for (Scope scope : {Scope::kWaitState, Scope::kHistory})
    for (auto& e : entries)
      if (e.scope == scope) out->findings.push_back(std::move(e.finding));
  // Culprits -> positions of the replaceable findings, so that each device
  // finding finds the first one about its culprits in O(log n), not by
  // comparing with every finding.
  std::map<std::vector<model::Rank>, std::set<size_t>> replaceable;
  for (size_t i = 0; i < out->findings.size(); ++i)
    if (Replaceable(out->findings[i])) replaceable[out->findings[i].culprit_ranks].insert(i);
  for (auto& e : entries) {
    if (e.scope != Scope::kDevice) continue;
    CountWork();
    Finding& f = e.finding;
    size_t at = out->findings.size();
    if (Replaces(f)) {
      auto it = replaceable.find(f.culprit_ranks);
      if (it != replaceable.end() && !it->second.empty()) at = *it->second.begin();
    }
    if (at < out->findings.size()) {
      out->findings[at] = std::move(f);
    } else {
      out->findings.push_back(std::move(f));
    }
    // The finding now at `at` may be replaced by a later device finding.
    const Finding& now = out->findings[at];
    auto& slots = replaceable[now.culprit_ranks];
    if (Replaceable(now))
      slots.insert(at);
    else
      slots.erase(at);
  }
  entries.clear();
  out->edges = std::move(sink->device_edges);
  out->ranks = std::move(sink->device_ranks);
}

}  // namespace hangdx::analyze
