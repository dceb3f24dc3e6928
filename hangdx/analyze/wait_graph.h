// hangdx/analyze/wait_graph.h
// WaitGraph: a generic wait-for graph with typed waits. An edge A -> B means
// A cannot finish until B makes progress. Node semantics:
//   kAnd   needs every successor to finish (a collective, a P2P op with a named peer)
//   kOr    needs any one successor (an any-source receive)
//   kKofN  needs `k` of its successors (a pool of k free units held by them)
//   kSink  makes progress by itself as far as we can see (a rank busy elsewhere,
//          a rank with no data): never part of a deadlock
// Deadlock detection is graph reduction: sinks are reducible; an AND node is
// reducible when all successors are, an OR node when one is, a k-of-n node
// when k are. What is left cannot finish whatever happens outside it: those
// nodes are deadlocked, and each strongly connected component among them with
// a cycle is a witness. Deterministic: results never depend on hash order.
#pragma once

#include <cstdint>
#include <vector>

#include "hangdx/analyze/work.h"

namespace hangdx::analyze {

class WaitGraph {
 public:
  enum class NodeKind : uint8_t { kAnd, kOr, kKofN, kSink };

  // Adds a node and returns its id (dense, from 0).
  int AddNode(NodeKind kind, int k = 1);
  // Adds the edge from -> to. Duplicate edges are kept once.
  void AddEdge(int from, int to);

  int size() const { return static_cast<int>(kind_.size()); }
  NodeKind kind(int n) const { return kind_[n]; }
  // Counts 1 + its size as work (analyze/work.h): the caller walks it.
  const std::vector<int>& successors(int n) const {
    CountWork(1 + static_cast<int64_t>(succ_[n].size()));
    return succ_[n];
  }

  // Graph reduction: true for every node that can never finish.
  std::vector<bool> Deadlocked() const;

  // Strongly connected components (Tarjan, iterative: safe for 100,000s of
  // nodes) restricted to nodes with mask[n] true (all when mask is empty).
  // Only components that contain a cycle (size > 1, or a self-loop) are
  // returned, each sorted ascending; the list is sorted by first node.
  std::vector<std::vector<int>> CyclicComponents(const std::vector<bool>& mask = {}) const;

  // One elementary cycle inside `component` (a cyclic SCC), starting at its
  // smallest node, following the smallest successor that leads back.
  std::vector<int> WitnessCycle(const std::vector<int>& component) const;

 private:
  std::vector<NodeKind> kind_;
  std::vector<int> k_;
  std::vector<std::vector<int>> succ_;
};

}  // namespace hangdx::analyze
