// hangdx/ingest/cross_rank/pg_ranks.h
// From ranks inside a process group (communicator-local ranks) to global
// ranks, when several ranks' files say which local rank each of them is.
//
// Sources (PgConfig::self_local, filled by the parsers): NCCL Init lines
// `comm 0x.. rank R nRanks N ... commId 0x..` of a process whose global rank
// the file tells (NVIDIA/nccl src/init.cc); HCCL group info `group:[name],
// rankSize[32], rankId[25 24]` next to torch_npu's `RankID:101` (CANN
// task_exception_handler.cc; the first rankId number is the reporter's rank
// in the group).
#pragma once

#include <map>
#include <string>

#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// True for HCCL's world communicator ("hccl_world_group", the default
// group of torch_npu), in which a rank inside the group is the global rank.
inline bool IsHcclWorldGroup(std::string_view pg) { return pg == "hccl_world_group"; }

// pg name -> (local rank -> global rank), from every dump's
// PgConfig::self_local. A local rank claimed by two global ranks is dropped
// (and a kWarning diagnostic added to `diags` when it is non-null).
std::map<std::string, std::map<int64_t, model::Rank>> PgLocalRankMap(const model::Job& job,
                                                                     model::DiagnosticSink* diags);

// Uses PgLocalRankMap to
//  * turn a live wait on pg-local ranks (WaitSnapshot::pg_local, from HCCL
//    plogs) into a wait on global ranks when every awaited local rank is
//    mapped (in hccl_world_group every rank is: local == global):
//    pg_local becomes false and a kInfo diagnostic to *diags says which
//    file gave the mapping; unmapped waits stay pg-local;
//  * give a pg whose size N is known (NCCL log communicators) and whose N
//    local ranks are all mapped its true member list on every dump that
//    records it (ranks_known), replacing a guess such as 0..N-1.
// Never fails.
void MapPgLocalRanks(model::Job* job, model::DiagnosticSink* diags);

}  // namespace hangdx::ingest
