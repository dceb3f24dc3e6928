#include "hangdx/analyze/passes/cascades.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace hangdx::analyze {

using model::Rank;

namespace {

// Instance nodes by (pg name, pg desc, seq): a finding about that (pg, seq)
// roots there (several groups may share a name and description).
using InstanceIndex = std::map<std::tuple<std::string, std::string, int64_t>, std::vector<int>>;

InstanceIndex IndexInstances(const RankAnalysis& a) {
  InstanceIndex index;
  for (size_t i = 0; i < a.instances.list.size(); ++i) {
    const Instance& in = a.instances.list[i];
    int node = a.graph.InstanceNode(static_cast<int>(i));
    if (node >= 0) index[{a.groups[in.group].name, a.groups[in.group].desc, in.seq}].push_back(node);
  }
  return index;
}

// The graph nodes finding `e` is about, ascending.
std::vector<int> RootsOf(const RankAnalysis& a, const InstanceIndex& index, const FindingEntry& e) {
  std::vector<int> roots;
  if (e.component >= 0) roots = a.graph.components()[e.component];
  const Finding& f = e.finding;
  if (f.seq >= 0 && !f.pg_name.empty()) {
    auto it = index.find({f.pg_name, f.pg_desc, f.seq});
    if (it != index.end()) roots.insert(roots.end(), it->second.begin(), it->second.end());
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

// The nodes from which some root can be reached through at least one edge,
// a root counting only when it reaches another root. A search backwards from
// all roots at once where each node keeps at most two root labels (the
// first two that reach it): a node with a label other than itself
// qualifies, and each node is expanded at most twice, so the work is linear
// in the part of the graph upstream of the roots. Scratch arrays are shared
// across calls (`stamp` tells which call wrote a slot).
class Upstream {
 public:
  explicit Upstream(const RankAnalysis& a) : a_(a), pred_(a.graph.size()), stamp_(a.graph.size(), -1) {
    lab_[0].assign(a.graph.size(), -1);
    lab_[1].assign(a.graph.size(), -1);
    for (int v = 0; v < a.graph.size(); ++v)
      for (int w : a.graph.successors(v)) pred_[w].push_back(v);
  }

  std::vector<int> Of(const std::vector<int>& roots) {
    ++call_;
    std::vector<int> touched;
    std::vector<std::pair<int, int>> queue;  // (node, label) to expand
    for (int r : roots) Spread(r, r, &touched, &queue);
    for (size_t i = 0; i < queue.size(); ++i) Spread(queue[i].first, queue[i].second, &touched, &queue);
    std::vector<int> out;
    for (int v : touched)
      if (lab_[0][v] != v || (lab_[1][v] >= 0 && lab_[1][v] != v)) out.push_back(v);
    return out;
  }

 private:
  // Offers label l to every predecessor of v.
  void Spread(int v, int l, std::vector<int>* touched, std::vector<std::pair<int, int>>* queue) {
    CountWork(1 + static_cast<int64_t>(pred_[v].size()));
    for (int p : pred_[v]) {
      if (stamp_[p] != call_) {
        stamp_[p] = call_;
        lab_[0][p] = l;
        lab_[1][p] = -1;
        touched->push_back(p);
      } else if (lab_[0][p] == l || lab_[1][p] >= 0) {
        continue;  // has it, or has two already
      } else {
        lab_[1][p] = l;
      }
      queue->push_back({p, l});
    }
  }

  const RankAnalysis& a_;
  std::vector<std::vector<int>> pred_;
  std::vector<int> stamp_;
  std::vector<int> lab_[2];
  int call_ = 0;
};

}  // namespace

void CascadesPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  InstanceIndex index = IndexInstances(a);
  Upstream upstream(a);
  for (FindingEntry& e : sink->entries()) {
    if (e.scope != Scope::kWaitState) continue;
    std::vector<int> roots = RootsOf(a, index, e);
    if (roots.empty()) continue;
    Finding& f = e.finding;
    std::set<Rank> own(f.culprit_ranks.begin(), f.culprit_ranks.end());
    for (const auto& role : f.roles) own.insert(role.ranks.begin(), role.ranks.end());
    for (int p : upstream.Of(roots))
      for (Rank r : a.Waiters(p))
        if (!own.count(r)) f.blocked_behind.push_back(r);
    std::sort(f.blocked_behind.begin(), f.blocked_behind.end());
    f.blocked_behind.erase(std::unique(f.blocked_behind.begin(), f.blocked_behind.end()), f.blocked_behind.end());
  }
}

}  // namespace hangdx::analyze
