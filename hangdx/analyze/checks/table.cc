// The check table: every rank-level (and the device-level) check in run
// order. Findings keep this order until passes/order.h sorts them stably,
// so a row's place decides ties.
#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/checks/collective_mismatch.h"
#include "hangdx/analyze/checks/cycle.h"

namespace hangdx::analyze {

namespace {

const Check kChecks[] = {
    {"cycle", "deadlocks of the rank-level wait-for graph (p2p_cycle, order_inversion, wait_cycle)", Scope::kWaitState,
     &CycleCheck},
    {"collective_mismatch", "ranks of a pg that disagree on a collective, its sizes or its dtypes", Scope::kWaitState,
     &CollectiveMismatchCheck},
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
