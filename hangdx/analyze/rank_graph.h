// hangdx/analyze/rank_graph.h
// Step 5 of the rank-level analysis (analyze/rank_analysis.h): the rank-level
// wait-for graph, its reduction and its cyclic components. (The device-level
// engine has its own graph: analyze/device_graph.h.)
//
// Nodes: each kept (pg, seq) instance; each pending P2P op; each live wait
// state; and sinks: a rank not blocked in anything recorded ("idle": busy
// elsewhere, the usual culprit) and a rank with no data or whose log reports a
// crash ("no dump"). Edges (A -> B: A cannot finish until B progresses):
//   - an instance waits for every member that did not reach it, at the node
//     where that member is blocked now (AND), and for every member with no dump;
//   - an instance queued after an earlier unfinished problem of its pg (one
//     stream) waits for that one (an edge through no rank);
//   - a pending P2P op waits for its peer's matching op and for its rank's
//     earlier pending op in the pg;
//   - an instance of a pg whose members are not recorded (gloo), whose
//     recorded members are all in it, pending, while the pg has members that
//     left no record of it (one rank's collective cannot wait; or a record
//     gives the pg's size), waits for any one of the ranks that can be those
//     members (OR: which they are is unknown; it can finish only if one of
//     them can progress): the world's other ranks, less those whose dumps
//     show they are in no sub-group (GroupTable::InNoSubGroup). Only with
//     the world known (given or recorded): else a member may be a rank that
//     left no file;
//   - a wait snapshot waits for the ranks it lists (AND, or OR for any_of);
//     one on pg-local ranks gets no edges (checks/pg_local_wait.h reports it).
// Graph reduction (analyze/wait_graph.h) leaves the nodes that can never
// finish; the cyclic strongly connected components among them are the
// deadlocks.
//
//   RankGraph g = RankGraph::Build(job, world, groups, instances);
//   for (size_t c = 0; c < g.components().size(); ++c) ... g.Via(v, w)
//
// Immutable after Build(); deterministic (node ids follow instance, rank and
// op order, never hash order).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "hangdx/analyze/groups.h"
#include "hangdx/analyze/instances.h"
#include "hangdx/analyze/wait_graph.h"
#include "hangdx/analyze/work.h"

namespace hangdx::analyze {

enum class RankNodeType { kInstance, kP2P, kSnapshot, kIdle, kNoDump };

struct RankNode {
  RankNodeType type;
  model::Rank rank = -1;  // P2P, snapshot, idle, no-dump nodes
  int instance = -1;      // instance nodes: index into InstanceTable::list
  int group = -1;         // instance and P2P nodes
  uint32_t op = 0;        // P2P op index in the rank's dump
};

// One wait edge; `via` is the rank it goes through (-1: queued behind an
// earlier op of the same pg).
struct RankGraphEdge {
  int from, to;
  model::Rank via;
};

class RankGraph {
 public:
  // Builds the graph of `job` over resolved groups and kept instances, and
  // reduces it. Every rank with a dump gets its blocking node.
  static RankGraph Build(const model::Job& job, const World& world, const GroupTable& groups,
                         const InstanceTable& instances);

  // The accessors count as work (analyze/work.h): one step each, and one per
  // element for those that hand out a list the caller walks.
  const WaitGraph& graph() const { return graph_; }
  int size() const { return graph_.size(); }
  const RankNode& node(int n) const {
    CountWork();
    return nodes_[n];
  }
  // The successors of node n, ascending (counted by WaitGraph).
  const std::vector<int>& successors(int n) const { return graph_.successors(n); }
  // Every edge in the order it was added (duplicates included).
  const std::vector<RankGraphEdge>& edges() const {
    CountWork(static_cast<int64_t>(edges_.size()));
    return edges_;
  }
  // The rank on the first edge from -> to, -1 when it goes through none or
  // there is no such edge. O(log edges).
  model::Rank Via(int from, int to) const;

  // The node of kept instance i, -1 when it has none (healthy and finished).
  int InstanceNode(int i) const {
    CountWork();
    return instance_node_[i];
  }
  // The earlier unfinished problem instance of the same pg that instance i
  // is queued behind, -1 when none.
  int Behind(int i) const { return behind_[i]; }
  // The node where rank r is blocked now: its last recorded op if that op is
  // stuck, else its live wait state, else its sink. Known for every rank with
  // a dump and every rank an edge names; -1 for others.
  int Blocking(model::Rank r) const;
  // For kept instance i whose pg has members that left no record of it
  // (the OR wait above): the ranks that can be those members, ascending;
  // nullptr for every other instance.
  const std::vector<model::Rank>* UnseenMembers(int i) const {
    auto it = unseen_.find(i);
    return it == unseen_.end() ? nullptr : &it->second;
  }
  // True for an instance whose UnseenMembers is a reading, not a certainty:
  // its recorded members (two or more) are all in it, so it has members that
  // left no record unless it is merely slow (RankGraphBuilder::PossiblyUnseen).
  bool UnseenIsReading(int i) const { return unseen_reading_.count(i) > 0; }
  // (rank, its wait snapshot node) for the ranks with a non-empty live
  // wait, ascending by rank.
  const std::vector<std::pair<model::Rank, int>>& snapshots() const { return snapshot_node_; }

  // Graph reduction: true for a node that can never finish.
  bool dead(int n) const { return dead_[n]; }
  // Cyclic strongly connected components among the dead nodes, each sorted,
  // ordered by first node: each one is a deadlock.
  const std::vector<std::vector<int>>& components() const { return components_; }

 private:
  friend class RankGraphBuilder;
  WaitGraph graph_;
  std::vector<RankNode> nodes_;
  std::vector<RankGraphEdge> edges_;
  // ((from << 32) | to, via of the first such edge), ascending: a flat
  // table, not a hash map (one entry per wait of a 100,000-rank snapshot).
  std::vector<std::pair<uint64_t, model::Rank>> via_;
  std::vector<int> instance_node_, behind_;
  std::map<int, std::vector<model::Rank>> unseen_;  // instance -> ranks that can be its unrecorded members
  std::set<int> unseen_reading_;                    // instances of unseen_ taken by PossiblyUnseen
  // Blocking nodes by rank: ranks below blocking_dense_.size() in the array
  // (-1: none), the few far ranks in the map.
  std::vector<int> blocking_dense_;
  std::map<model::Rank, int> blocking_;
  std::vector<std::pair<model::Rank, int>> snapshot_node_;
  std::vector<bool> dead_;
  std::vector<std::vector<int>> components_;
};

}  // namespace hangdx::analyze
