#include "hangdx/analyze/rank_analysis.h"

#include "hangdx/model/diagnostic_sink.h"

namespace hangdx::analyze {

RankAnalysis BuildRankAnalysis(const model::Job& job, const AnalyzeOptions& options) {
  model::DiagnosticSink diags;
  World world = ResolveWorld(job, &diags);
  GroupTable groups = GroupTable::Resolve(job, world, &diags);
  InstanceTable instances = BuildInstances(groups, options);
  RankGraph graph = RankGraph::Build(job, world, groups, instances);
  bool dump_based = false;
  for (const auto& d : job.dumps) dump_based = dump_based || d.from_flight_recorder;
  return RankAnalysis{
      job,         options, dump_based, std::move(world), std::move(groups), std::move(instances), std::move(graph),
      diags.Take()};
}

std::vector<model::Rank> RankAnalysis::Waiters(int n) const {
  const RankNode& node = graph.node(n);
  if (node.type == RankNodeType::kInstance)
    CountWork(static_cast<int64_t>(instances.list[node.instance].arrived.size()));
  CountWork();
  switch (node.type) {
    case RankNodeType::kInstance:
      return instances.list[node.instance].arrived;
    case RankNodeType::kP2P:
    case RankNodeType::kSnapshot:
      return {node.rank};
    default:
      return {};
  }
}

std::string RankAnalysis::NodeLabel(int n) const {
  const RankNode& node = graph.node(n);
  switch (node.type) {
    case RankNodeType::kInstance: {
      const Instance& in = instances.list[node.instance];
      return groups[in.group].Label() + " seq " + std::to_string(in.seq) + " " + std::string(LeadOp(in).op);
    }
    case RankNodeType::kP2P: {
      const model::OpRecord& op = job.Find(node.rank)->ops[node.op];
      return groups[node.group].Label() + " " + std::string(op.profiling_name);
    }
    case RankNodeType::kSnapshot: {
      const auto& w = *job.Find(node.rank)->wait;
      return w.current_op + (w.op_seq >= 0 ? " seq " + std::to_string(w.op_seq) : "");
    }
    case RankNodeType::kIdle:
      return "not in a collective";
    case RankNodeType::kNoDump:
      return "no dump";
  }
  return "";
}

std::string RankAnalysis::LabelOf(model::Rank r, const model::OpRecord& op) const {
  const model::RankDump* d = job.Find(r);
  int gi = d ? groups.GroupOf(*d, op.pg_name) : -1;
  std::string pg = gi >= 0 ? groups[gi].Label() : "pg " + (op.pg_name.empty() ? "''" : std::string(op.pg_name));
  if (op.is_p2p) return pg + " " + std::string(op.profiling_name);
  return pg + " seq " + std::to_string(op.collective_seq) + " " + std::string(op.op);
}

}  // namespace hangdx::analyze
