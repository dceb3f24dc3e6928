// hangdx/analyze/checks/pg_local_wait.h
// The pg-local-wait check: live waits on ranks known only by their rank
// inside a pg (an HCCL notify wait's remote rank, WaitSnapshot::pg_local)
// whose global ranks no file maps (ingest::MapPgLocalRanks). One missing_rank
// per (pg, awaited ranks), the culprits named in that pg's numbering
// (ranks_are_pg_local), the waiters' timeout lines as evidence. Such waits
// get no edges in the rank graph.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void PgLocalWaitCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
