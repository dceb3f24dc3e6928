// hangdx/analyze/rank_analysis.h
// RankAnalysis: the rank-level engine's context, built once from a
// model::Job and then only read. Every check in analyze/checks/ and every
// pass in analyze/passes/ is a function of it. (The device-level engine is
// analyze/device_graph.h; the two meet in one place only:
// passes/device_meets_rank.h.)
//
// Built in five steps, each in its own file:
//   1. world.h              which ranks form the job (world size, ranks without a dump)
//   2. groups.h             process groups resolved across ranks, each member's ops indexed
//   3. instances.h          every (pg, seq) worth a look (problems, pending)
//   4. evaluate_instance.cc each instance judged on its own: who arrived, signature classes
//   5. rank_graph.h         the wait-for graph, its reduction and its cyclic components
//
//   RankAnalysis a = BuildRankAnalysis(job, options);
//   for (const Instance& in : a.instances.list) ... a.groups[in.group].Label()
//
// Keeps references into `job`, which must outlive it. Immutable after
// BuildRankAnalysis, so checks may run in any order without seeing each
// other; deterministic.
#pragma once

#include <string>
#include <vector>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/groups.h"
#include "hangdx/analyze/instances.h"
#include "hangdx/analyze/rank_graph.h"
#include "hangdx/analyze/world.h"
#include "hangdx/model/job.h"

namespace hangdx::analyze {

struct RankAnalysis {
  const model::Job& job;
  AnalyzeOptions options;
  // Some rank has a Flight Recorder dump. Without one (text logs only) a
  // rank with no line is absent, not dead: every rank waiting in a
  // collective logs its timeout.
  bool dump_based = false;
  World world;
  GroupTable groups;
  InstanceTable instances;
  RankGraph graph;
  // The data problems the steps met (a pg whose members exclude the rank
  // recording it, an unbelievable world size), through one DiagnosticSink.
  std::vector<model::Diagnostic> diagnostics;

  // The first op arrived rank number `arrived_idx` of `in` recorded at its seq.
  const model::OpRecord& OpAt(const Instance& in, size_t arrived_idx) const {
    const Group& g = groups[in.group];
    return g.DumpOf(in.arrived[arrived_idx])->ops[in.ops(arrived_idx).front()];
  }
  // The op that stands for the instance: the lead rank's (Instance::lead).
  const model::OpRecord& LeadOp(const Instance& in) const { return OpAt(in, in.lead); }
  // The dump of member r of the instance's pg.
  const model::RankDump* DumpOf(const Instance& in, model::Rank r) const { return groups[in.group].DumpOf(r); }
  bool Crashed(model::Rank r) const { return analyze::Crashed(job, r); }
  // Every op dump `d` (one of the job's) recorded, also those ingest did
  // not keep (model/history.h).
  const model::OpHistory& History(const model::RankDump& d) const { return groups.HistoryOf(d); }
  // The type of the node where rank r is blocked now (a rank with a dump,
  // or one the graph names).
  RankNodeType BlockingType(model::Rank r) const { return graph.node(graph.Blocking(r)).type; }

  // True for kept instance i when it is a problem that is neither part of a
  // deadlock nor queued behind an earlier problem of its pg: a root cause,
  // reported by exactly one of the mismatch, unreadable, crashed_rank and
  // missing_rank checks.
  bool IsRoot(int i) const {
    int node = graph.InstanceNode(i);
    return instances.list[i].problem() && !(node >= 0 && graph.dead(node)) && graph.Behind(i) < 0;
  }
  // Ranks blocked at graph node n (its waiters).
  std::vector<model::Rank> Waiters(int n) const;
  // What graph node n is, in words: "pg 0 (default_pg) seq 5 all_reduce",
  // "not in a collective", ...
  std::string NodeLabel(int n) const;
  // "pg 0 (default_pg) seq 12 all_reduce" for an op rank r recorded.
  std::string LabelOf(model::Rank r, const model::OpRecord& op) const;
};

// Runs the five steps on `job`. Never fails.
RankAnalysis BuildRankAnalysis(const model::Job& job, const AnalyzeOptions& options);

}  // namespace hangdx::analyze
