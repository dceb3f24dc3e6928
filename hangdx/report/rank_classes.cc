#include "hangdx/report/rank_classes.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

namespace hangdx::report {

namespace {

// The summary of a rank as one string: the states of two ranks are the
// same exactly when these are ('\0' cannot occur in the fields' meaning).
std::string StateKey(const analyze::RankSummary& s) {
  std::string k;
  k.reserve(s.state.size() + s.current.size() + s.last_completed.size() + s.file.size() + 3);
  k.append(s.state).push_back('\0');
  k.append(s.current).push_back('\0');
  k.append(s.last_completed).push_back('\0');
  k.append(s.file);
  return k;
}

}  // namespace

RankClasses ClassifyRanks(const analyze::Diagnosis& d) {
  const size_t n = d.ranks.size();
  // Step 1: the state of each rank, numbered in order of first appearance.
  std::unordered_map<std::string, int> state_ids;
  std::vector<int> state(n);
  for (size_t i = 0; i < n; ++i)
    state[i] = state_ids.try_emplace(StateKey(d.ranks[i]), static_cast<int>(state_ids.size())).first->second;
  // Where each rank's summary is (d.ranks is sorted by rank, but a
  // device-level engine may have added ranks before the rank-level ones).
  std::unordered_map<int64_t, size_t> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) index.try_emplace(d.ranks[i].rank, i);
  // Step 2: per rank the states it waits for (sorted, unique).
  std::vector<std::vector<int>> waits(n);
  std::vector<std::vector<size_t>> targets(n);
  for (const analyze::RankEdge& e : d.edges) {
    auto from = index.find(e.from), to = index.find(e.to);
    if (from == index.end() || to == index.end()) continue;
    waits[from->second].push_back(state[to->second]);
    targets[from->second].push_back(to->second);
  }
  // Step 3: classes, keyed by (state, waited-for states).
  std::map<std::pair<int, std::vector<int>>, int> class_ids;
  std::vector<size_t> order(n);  // ranks ascending: classes numbered by lowest rank
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.ranks[a].rank < d.ranks[b].rank; });
  RankClasses out;
  out.of.assign(n, -1);
  for (size_t i : order) {
    std::vector<int>& w = waits[i];
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    auto [it, fresh] = class_ids.try_emplace({state[i], std::move(w)}, static_cast<int>(out.classes.size()));
    if (fresh) {
      const analyze::RankSummary& s = d.ranks[i];
      out.classes.push_back({s.state, s.current, s.last_completed, s.file, {}, 0, {}});
    }
    out.of[i] = it->second;
    RankClass& c = out.classes[static_cast<size_t>(it->second)];
    ++c.count;
    c.ranks.push_back(d.ranks[i].rank);
  }
  // Step 4: each class's waited-for classes.
  for (size_t i = 0; i < n; ++i)
    for (size_t t : targets[i]) out.classes[static_cast<size_t>(out.of[i])].waits_for.push_back(out.of[t]);
  for (RankClass& c : out.classes) {
    std::sort(c.waits_for.begin(), c.waits_for.end());
    c.waits_for.erase(std::unique(c.waits_for.begin(), c.waits_for.end()), c.waits_for.end());
  }
  return out;
}

}  // namespace hangdx::report
