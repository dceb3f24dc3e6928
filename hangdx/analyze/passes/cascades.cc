#include "hangdx/analyze/passes/cascades.h"

#include <algorithm>
#include <map>
#include <set>

namespace hangdx::analyze {

using model::Rank;

void CascadesPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  auto& entries = sink->entries();
  // Map root nodes to findings.
  std::map<int, std::vector<size_t>> root_of_node;
  for (size_t fi = 0; fi < entries.size(); ++fi) {
    if (entries[fi].scope != Scope::kWaitState || entries[fi].component < 0) continue;
    for (int v : a.graph.components()[entries[fi].component]) root_of_node[v].push_back(fi);
  }
  for (size_t fi = 0; fi < entries.size(); ++fi) {
    const Finding& f = entries[fi].finding;
    if (entries[fi].scope != Scope::kWaitState || f.seq < 0 || f.pg_name.empty()) continue;
    for (size_t i = 0; i < a.instances.list.size(); ++i) {
      const Instance& in = a.instances.list[i];
      int node = a.graph.InstanceNode(static_cast<int>(i));
      if (node >= 0 && in.seq == f.seq && a.groups[in.group].name == f.pg_name && a.groups[in.group].desc == f.pg_desc)
        root_of_node[node].push_back(fi);
    }
  }
  // Reverse BFS from each root over predecessors.
  const WaitGraph& g = a.graph.graph();
  std::vector<std::vector<int>> pred(g.size());
  for (int v = 0; v < g.size(); ++v)
    for (int w : g.successors(v)) pred[w].push_back(v);
  for (auto& [root, fis] : root_of_node) {
    std::vector<bool> seen(g.size(), false);
    std::vector<int> stack{root};
    seen[root] = true;
    std::set<Rank> behind;
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      for (int p : pred[v]) {
        if (seen[p]) continue;
        seen[p] = true;
        stack.push_back(p);
        for (Rank r : a.Waiters(p)) behind.insert(r);
      }
    }
    for (size_t fi : fis) {
      Finding& f = entries[fi].finding;
      std::set<Rank> own(f.culprit_ranks.begin(), f.culprit_ranks.end());
      for (const auto& role : f.roles) own.insert(role.ranks.begin(), role.ranks.end());
      for (Rank r : behind)
        if (!own.count(r)) f.blocked_behind.push_back(r);
      std::sort(f.blocked_behind.begin(), f.blocked_behind.end());
      f.blocked_behind.erase(std::unique(f.blocked_behind.begin(), f.blocked_behind.end()), f.blocked_behind.end());
    }
  }
}

}  // namespace hangdx::analyze
