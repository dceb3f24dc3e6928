// hangdx/ingest/cross_rank/plog_chain.h
// Rebuilds the device-level chain behind Ascend notify-wait timeouts from
// the HCCL plogs of several ranks (RankDump::device_tasks, filled by
// logs/hccl_plog.cc), as a model::DeviceJob that analyze/device_graph
// explains:
//
//   rank 0 stream 109: Notify Wait (notify 0x213) waits for rank 1 to record it
//   -> rank 1 would record it on the stream of its own stuck task, behind
//      stream 111's Notify Wait (notify 0x215), which waits for rank 2
//   -> rank 2's AICPU task 19016 on stream 2 failed: the cause.
//
// Model (docs/snapshot-format.md, "HCCL plog chains"): each stuck or failed
// task is the started head of its stream ("stream <streamID>"); a notify
// wait is a kWait on an event named after the notify and its two ranks; the
// notify's record is placed on the remote rank behind that rank's stuck task
// in the same group (else behind its failed task, else behind its first
// stuck task): it has not run, so it comes after what the remote is stuck
// in. A remote rank with no stuck task (or no log) records nothing: the wait
// then names it as the rank that never sent. Failed tasks are DevOps with
// `failed` set. Remote ranks are group-local in the logs: they become global
// through PgLocalRankMap (and in HCCL's world group, hccl_world_group, a
// group rank is the global rank); an unmapped remote keeps its chain open
// ("rank 24 of group g; its global rank is not in these files").
#pragma once

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Appends one DeviceJob to job->device when some rank's plog reports a
// failed task, or a stuck notify wait whose remote rank is placed (a record
// on it, or a known global rank that never records); does nothing otherwise
// (waits on unplaced remotes only: the rank-level finding says it all).
// Every op's `source` is its plog line. Never fails.
void BuildPlogDeviceJob(model::Job* job);

}  // namespace hangdx::ingest
