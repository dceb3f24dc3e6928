// hangdx/ingest/formats/hccl_plog/hccl_plog.h
// Reader for Huawei Ascend CANN logs about HCCL collectives: plog lines
// (`[ERROR] HCCL(pid,proc):date [file:line][tid]...`), the console error
// report (`EI0002: ... The wait execution of the Notify register times out
// ... remote rank: [24] ...`), task-exception records (`Task run failed, base
// information is streamID:[..], taskID[..], tag[..], index[..]`, `groupRank
// information is group:[..], rankSize[..], rankId[..]`), heartbeat `Cluster
// Exception Location` lines, torch_npu `(PID:.., Device:.., RankID:..)`
// headers, and HCCL_ENTRY_LOG_ENABLE `Entry-HcclAllReduce: tag[..], ...` calls.
//
// Upstream: CANN HCCL task_exception_handler.cc, heartbeat.cc,
// hccl_opbase_atrace_info.cc (hicann/hccl docs fault_diagnosis/
// task_exec_stage.md); the EI00xx texts from CANN's error manager; torch_npu
// (Ascend/pytorch) PTA headers. Versions: the task-exception records of
// CANN 6 (one line), 8.0 and >= 8.5 (base / groupRank / opData lines). See
// docs/log-formats.md section 5.
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// 50 when `data` holds HCCL plog or CANN console lines (`] HCCL(`,
// `EI0002`, `Notify register`, `Task run failed`, `Entry-Hccl`,
// `HeartbeatAbnormal`, `PTA call acl api failed`). Else 0.
int SniffHcclPlog(std::string_view data);

// Reads HCCL text into `out`. Rank: torch_npu's `RankID:N`
// (global), else a `[rankN]:` prefix, else `in.rank_hint`.
//  * A notify-wait timeout or task exception -> an OpRecord for the stuck op
//    (pg = the HCCL group, op from the tag, collective_seq = `index[N]` when
//    printed, else -1; retired, not completed) and a LogEvent kTimeout whose
//    message names the remote (peer) rank, which is group-local, plus
//    stream/task/notify ids, rankSize and this rank's group rank; the
//    group's PgConfig gets self_local = the first number of `rankId[..]`
//    (this rank's rank in the group) and desc "HCCL group (rankSize N)".
//  * Entry- lines -> OpRecords per communicator with seq = call order.
//  * Heartbeat `Cluster Exception Location` -> LogEvent kOther naming the rank.
// Always returns true (a text format reads what it recognizes).
bool ParseHcclPlog(const Artifact& in, RecordSink* out);

// Value of `key[...]` / `key:[...]` / `key: [...]` in an HCCL message ("" if
// absent). Brackets may nest one level (`tag[..]` inside `base information: [..]`).
std::string_view HcclField(std::string_view msg, std::string_view key);

}  // namespace hangdx::ingest
