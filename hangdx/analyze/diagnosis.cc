#include "hangdx/analyze/diagnosis.h"

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

}  // namespace hangdx::analyze
