#include "hangdx/analyze/diagnosis.h"

#include <algorithm>

namespace hangdx::analyze {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kCollectiveMismatch:
      return "collective_mismatch";
    case Kind::kSizeMismatch:
      return "size_mismatch";
    case Kind::kMissingRank:
      return "missing_rank";
    case Kind::kCrashedRank:
      return "crashed_rank";
    case Kind::kStraggler:
      return "straggler";
    case Kind::kP2pCycle:
      return "p2p_cycle";
    case Kind::kP2pMismatch:
      return "p2p_mismatch";
    case Kind::kWaitCycle:
      return "wait_cycle";
    case Kind::kStreamCycle:
      return "stream_cycle";
    case Kind::kOrderInversion:
      return "order_inversion";
    case Kind::kResourceDeadlock:
      return "resource_deadlock";
    case Kind::kTaskQueueDeadlock:
      return "task_queue_deadlock";
    case Kind::kUndecided:
      return "undecided";
  }
  return "undecided";
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "error";
}

Rank HighestRankListed(const Diagnosis& d) {
  Rank top = -1;
  auto see = [&top](const std::vector<Rank>& v) {
    for (Rank r : v) top = std::max(top, r);
  };
  for (const Finding& f : d.findings) {
    see(f.culprit_ranks);
    see(f.cycle);
    see(f.blocked_behind);
    see(f.candidates);
    for (const RoleGroup& g : f.roles) see(g.ranks);
    for (const Evidence& e : f.evidence) top = std::max(top, e.rank);
  }
  for (const PgSummary& p : d.pgs) see(p.ranks);
  for (const RankSummary& r : d.ranks) top = std::max(top, r.rank);
  for (const RankEdge& e : d.edges) top = std::max({top, e.from, e.to});
  see(d.ranks_without_dump);
  for (const auto& [r, file] : d.unreadable) top = std::max(top, r);
  return top;
}

}  // namespace hangdx::analyze
