#include "hangdx/analyze/wait_graph.h"

#include <algorithm>
#include <deque>

#include "hangdx/analyze/work.h"

namespace hangdx::analyze {

int WaitGraph::AddNode(NodeKind kind, int k) {
  kind_.push_back(kind);
  k_.push_back(k);
  succ_.emplace_back();
  return static_cast<int>(kind_.size()) - 1;
}

void WaitGraph::AddEdge(int from, int to) {
  auto& s = succ_[from];
  auto it = std::lower_bound(s.begin(), s.end(), to);
  if (it == s.end() || *it != to) s.insert(it, to);
}

std::vector<bool> WaitGraph::Deadlocked() const {
  const int n = size();
  std::vector<std::vector<int>> pred(n);
  std::vector<int> need(n);
  for (int v = 0; v < n; ++v) {
    for (int w : succ_[v]) pred[w].push_back(v);
    int deg = static_cast<int>(succ_[v].size());
    switch (kind_[v]) {
      case NodeKind::kAnd:
        need[v] = deg;
        break;
      case NodeKind::kOr:
        need[v] = deg == 0 ? 0 : 1;
        break;
      case NodeKind::kKofN:
        need[v] = std::min(std::max(k_[v], 0), deg);
        break;
      case NodeKind::kSink:
        need[v] = 0;
        break;
    }
  }
  std::vector<bool> reduced(n, false);
  std::deque<int> work;
  for (int v = 0; v < n; ++v)
    if (need[v] == 0) {
      reduced[v] = true;
      work.push_back(v);
    }
  CountWork(n);
  while (!work.empty()) {
    int w = work.front();
    work.pop_front();
    CountWork(1 + static_cast<int64_t>(pred[w].size()));
    for (int v : pred[w]) {
      if (reduced[v]) continue;
      if (--need[v] <= 0) {
        reduced[v] = true;
        work.push_back(v);
      }
    }
  }
  std::vector<bool> dead(n);
  for (int v = 0; v < n; ++v) dead[v] = !reduced[v];
  return dead;
}

std::vector<std::vector<int>> WaitGraph::CyclicComponents(const std::vector<bool>& mask) const {
  const int n = size();
  auto in = [&](int v) { return mask.empty() || mask[v]; };
  std::vector<int> index(n, -1), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<int> stack;
  std::vector<std::vector<int>> out;
  int counter = 0;
  struct Frame {
    int v;
    size_t next;
  };
  for (int root = 0; root < n; ++root) {
    if (!in(root) || index[root] >= 0) continue;
    std::vector<Frame> call{{root, 0}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!call.empty()) {
      CountWork();
      Frame& f = call.back();
      const auto& s = succ_[f.v];
      if (f.next < s.size()) {
        int w = s[f.next++];
        if (!in(w)) continue;
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      int v = f.v;
      call.pop_back();
      if (!call.empty()) low[call.back().v] = std::min(low[call.back().v], low[v]);
      if (low[v] != index[v]) continue;
      std::vector<int> comp;
      int w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        comp.push_back(w);
      } while (w != v);
      bool cyclic = comp.size() > 1 || std::binary_search(succ_[v].begin(), succ_[v].end(), v);
      if (cyclic) {
        std::sort(comp.begin(), comp.end());
        out.push_back(std::move(comp));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> WaitGraph::WitnessCycle(const std::vector<int>& component) const {
  if (component.empty()) return {};
  // Positions in the (sorted) component stand for its nodes, so the work is
  // O(component log component), not O(graph) per component.
  auto pos = [&](int v) -> int {
    auto it = std::lower_bound(component.begin(), component.end(), v);
    return it != component.end() && *it == v ? static_cast<int>(it - component.begin()) : -1;
  };
  int start = component.front();
  // BFS inside the component from start's successors back to start; the
  // smallest-successor order makes the witness deterministic.
  std::vector<int> parent(component.size(), -2);  // by position: the node it was reached from
  std::deque<int> q;
  for (int w : succ_[start]) {
    CountWork();
    int pw = pos(w);
    if (pw < 0) continue;
    if (w == start) return {start};
    if (parent[pw] == -2) {
      parent[pw] = start;
      q.push_back(w);
    }
  }
  while (!q.empty()) {
    int v = q.front();
    q.pop_front();
    for (int w : succ_[v]) {
      CountWork();
      int pw = pos(w);
      if (pw < 0) continue;
      if (w == start) {
        std::vector<int> path{v};
        for (int x = parent[pos(v)]; x != start; x = parent[pos(x)]) path.push_back(x);
        path.push_back(start);
        std::reverse(path.begin(), path.end());
        return path;
      }
      if (parent[pw] == -2) {
        parent[pw] = v;
        q.push_back(w);
      }
    }
  }
  return {start};
}

}  // namespace hangdx::analyze
