// The check table: every rank-level (and the device-level) check in run
// order. Findings keep this order until passes/order.h sorts them stably,
// so a row's place decides ties.
#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/checks/collective_mismatch.h"
#include "hangdx/analyze/checks/crashed_rank.h"
#include "hangdx/analyze/checks/cycle.h"
#include "hangdx/analyze/checks/device_level.h"
#include "hangdx/analyze/checks/known_bug.h"
#include "hangdx/analyze/checks/latent_order.h"
#include "hangdx/analyze/checks/lost_peer.h"
#include "hangdx/analyze/checks/missing_rank.h"
#include "hangdx/analyze/checks/named_culprit.h"
#include "hangdx/analyze/checks/pg_creation_order.h"
#include "hangdx/analyze/checks/pg_local_wait.h"
#include "hangdx/analyze/checks/reported_mismatch.h"
#include "hangdx/analyze/checks/snapshot_root.h"
#include "hangdx/analyze/checks/stack_sites.h"
#include "hangdx/analyze/checks/stall.h"
#include "hangdx/analyze/checks/store_wait.h"
#include "hangdx/analyze/checks/unreadable.h"

namespace hangdx::analyze {

namespace {

const Check kChecks[] = {
    {"cycle", "deadlocks of the rank-level wait-for graph (p2p_cycle, order_inversion, wait_cycle)", Scope::kWaitState,
     &CycleCheck},
    {"collective_mismatch", "ranks of a pg that disagree on a collective, its sizes or its dtypes", Scope::kWaitState,
     &CollectiveMismatchCheck},
    {"reported_mismatch",
     "from logs alone: a mismatch a rank reports (gloo, NCCL, DETAIL, Horovod) that no record shows", Scope::kWaitState,
     &ReportedMismatchCheck},
    {"missing_rank", "members that never reached a (pg, seq) the others wait in (or a straggler, a dead rank)",
     Scope::kWaitState, &MissingRankCheck},
    {"crashed_rank", "ranks that others wait for whose logs report a crash", Scope::kWaitState, &CrashedRankCheck},
    {"lost_peer", "from logs alone: the peer whose connection the failing ranks lost, or the one rank that can be it",
     Scope::kWaitState, &LostPeerCheck},
    {"store_wait", "from logs: ranks that timed out creating a gloo pg, waiting for the address of a rank that never came",
     Scope::kWaitState, &StoreWaitCheck},
    {"named_culprit", "the ranks a producer's own report blames (desync report, stall inspector, fr_trace)",
     Scope::kWaitState, &NamedCulpritCheck},
    {"unreadable", "ranks that others wait for whose dumps could not be read", Scope::kWaitState, &UnreadableCheck},
    {"pg_creation_order", "a pg description that is a different pg on different ranks (new_group order)",
     Scope::kWaitState, &PgCreationOrderCheck},
    {"stall", "a pg every member is in and agrees on that does not finish (transport, device)", Scope::kWaitState,
     &StallCheck},
    {"stack_sites", "ranks known from stacks only, grouped by collective call site (as STAT does)", Scope::kWaitState,
     &StackSitesCheck},
    {"pg_local_wait", "waits on ranks known only inside their pg (HCCL plogs)", Scope::kWaitState, &PgLocalWaitCheck},
    {"snapshot_root", "live waits for ranks that wait on nothing or left no state", Scope::kWaitState,
     &SnapshotRootCheck},
    {"known_bug", "every rank with a stack stuck where a known library bug hangs (checks/known_bugs/*.sigs)",
     Scope::kWaitState, &KnownBugCheck},
    {"latent_order", "pgs sharing ranks whose collectives are issued in different orders (no hang needed)",
     Scope::kHistory, &LatentOrderCheck},
    {"device_level", "the device-level engine on each device snapshot (stream, task-queue, resource deadlocks)",
     Scope::kDevice, &DeviceLevelCheck},
};

}  // namespace

std::span<const Check> Checks() { return kChecks; }

void RunChecks(const RankAnalysis& a, FindingSink* sink) {
  for (const Check& c : kChecks) {
    sink->Begin(c.id, c.scope);
    c.run(a, sink);
  }
}

}  // namespace hangdx::analyze
