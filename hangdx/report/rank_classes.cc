#include "hangdx/report/rank_classes.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

namespace hangdx::report {

namespace {

// A rank's summary as the four views that decide its state (into the
// Diagnosis, which outlives the map): no string is built per rank.
using StateKey = std::array<std::string_view, 4>;

StateKey KeyOf(const analyze::RankSummary& s) { return {s.state, s.current, s.last_completed, s.file}; }

struct StateKeyHash {
  size_t operator()(const StateKey& k) const {
    size_t h = 0;
    for (std::string_view f : k) h = h * 1000003u ^ std::hash<std::string_view>()(f);
    return h;
  }
};

// Where each rank's summary is: an array by rank when the ranks are dense
// (a job's ranks are 0..n-1), else a hash map (d.ranks is sorted by rank,
// but a device-level engine may have added ranks before the rank-level
// ones).
class SummaryIndex {
 public:
  explicit SummaryIndex(const std::vector<analyze::RankSummary>& ranks) {
    int64_t top = -1;
    bool dense = true;
    for (const auto& s : ranks) {
      dense = dense && s.rank >= 0;
      top = std::max(top, s.rank);
    }
    if (dense && static_cast<uint64_t>(top) < 4 * ranks.size() + 1024) {
      dense_.assign(static_cast<size_t>(top) + 1, kNone);
      for (size_t i = ranks.size(); i-- > 0;) dense_[static_cast<size_t>(ranks[i].rank)] = i;  // the first wins
      return;
    }
    far_.reserve(ranks.size());
    for (size_t i = 0; i < ranks.size(); ++i) far_.try_emplace(ranks[i].rank, i);
  }
  // The index of rank r's summary, kNone when it has none.
  size_t Find(int64_t r) const {
    if (!dense_.empty())
      return r >= 0 && static_cast<size_t>(r) < dense_.size() ? dense_[static_cast<size_t>(r)] : kNone;
    auto it = far_.find(r);
    return it == far_.end() ? kNone : it->second;
  }
  static constexpr size_t kNone = SIZE_MAX;

 private:
  std::vector<size_t> dense_;
  std::unordered_map<int64_t, size_t> far_;
};

}  // namespace

RankClasses ClassifyRanks(const analyze::Diagnosis& d) {
  const size_t n = d.ranks.size();
  // Step 1: the state of each rank, numbered in order of first appearance.
  std::unordered_map<StateKey, int, StateKeyHash> state_ids;
  std::vector<int> state(n);
  for (size_t i = 0; i < n; ++i)
    state[i] = state_ids.try_emplace(KeyOf(d.ranks[i]), static_cast<int>(state_ids.size())).first->second;
  // Step 2: per rank the summaries it waits for, as flat lists (CSR:
  // targets[first[i] .. first[i + 1]) for rank i), not one vector per rank.
  SummaryIndex index(d.ranks);
  std::vector<std::pair<size_t, size_t>> edges;  // (from, to) summary indices
  edges.reserve(d.edges.size());
  for (const analyze::RankEdge& e : d.edges) {
    size_t from = index.Find(e.from), to = index.Find(e.to);
    if (from != SummaryIndex::kNone && to != SummaryIndex::kNone) edges.emplace_back(from, to);
  }
  std::vector<size_t> first(n + 1, 0), targets(edges.size());
  for (const auto& e : edges) ++first[e.first + 1];
  for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<size_t> fill(first.begin(), first.end() - 1);
  for (const auto& e : edges) targets[fill[e.first]++] = e.second;
  // Step 3: classes, keyed by (state, waited-for states).
  std::map<std::pair<int, std::vector<int>>, int> class_ids;
  std::vector<size_t> order(n);  // ranks ascending: classes numbered by lowest rank
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.ranks[a].rank < d.ranks[b].rank; });
  RankClasses out;
  out.of.assign(n, -1);
  for (size_t i : order) {
    // The states rank i waits for, sorted, unique.
    std::vector<int> w;
    w.reserve(first[i + 1] - first[i]);
    for (size_t k = first[i]; k < first[i + 1]; ++k) w.push_back(state[targets[k]]);
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
    for (size_t k = first[i]; k < first[i + 1]; ++k)
      out.classes[static_cast<size_t>(out.of[i])].waits_for.push_back(out.of[targets[k]]);
  for (RankClass& c : out.classes) {
    std::sort(c.waits_for.begin(), c.waits_for.end());
    c.waits_for.erase(std::unique(c.waits_for.begin(), c.waits_for.end()), c.waits_for.end());
  }
  return out;
}

}  // namespace hangdx::report
