// hangdx/analyze/checks/store_wait.h
// The store-wait check, from logs: ranks that timed out creating a gloo pg
// (init_process_group, new_group, DETAIL's gloo helper pg) while they waited
// in the store for a peer's address. gloo connects a pg's members in a full
// mesh through the store: each member sets the key of its own rank, then
// waits for every other member's (gloo/rendezvous/context.cc,
// connectFullMesh), so the key in the waiter's "wait timeout after Nms,
// keys: /default_pg/0//cpu//0/2" names the member that never arrived
// (catalogue row torch.gloo.connect_wait_timeout). The waiters are victims:
// a launcher that lists the first of them as its "root cause" (torchrun)
// lists the first rank to give up, not the one that never came.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

// The table's store_wait row: one missing_rank finding per pg whose
// creation some rank timed out in, naming the awaited ranks that did not
// themselves report the wait (global ranks in the default pg; ranks inside
// the pg, ranks_are_pg_local, in a new_group whose members no file maps).
// Says nothing when every awaited rank is itself a waiter. Never fails.
void StoreWaitCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
