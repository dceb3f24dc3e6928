// hangdx/ingest/merge.h
// Merging what several artifacts say about the operations of one rank: a
// Flight Recorder dump and the rank's stderr (watchdog timeouts, DETAIL
// fingerprints), an NCCL_DEBUG log, an HCCL plog. The same (pg, seq) seen in
// two sources is one operation; an operation seen only in a log is kept.
//
//   model::RankDump dump = ...;   // the base: the Flight Recorder dump if any
//   MergeRankOps(&dump, log_dump, &diags);
#pragma once

#include <string_view>
#include <vector>

#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Merges the ops of `from` (another artifact of the same rank) into `*into`.
// Ops are keyed by (pg name, collective or P2P, seq); ops with seq -1 have no
// key and are always added.
//  * A key both sides hold is one op: `into`'s record is kept (call it with
//    the Flight Recorder dump as `into`) and only the fields it lacks are
//    filled from `from` (sizes, dtypes, state, timeout, duration, times).
//    Claims that disagree (op type, element counts, dtypes) leave `into`'s
//    value and add a kWarning diagnostic naming both files (to *diags, whose
//    per-file cap bounds how many a file gives).
//  * A key only `from` holds is added, placed among `into`'s ops of the same
//    pg by seq (after the last one below it), or at the end for a new pg.
// Strings, shapes and frames are copied into `into`'s interner, so `from` may
// be destroyed afterwards. Each added op's `source` names its file (an entry
// of into->extra_files, appended when missing). pg configs and pg statuses
// `into` lacks are taken from `from`. Never fails.
void MergeRankOps(model::RankDump* into, const model::RankDump& from, model::DiagnosticSink* diags);

// The ops of `d` (a rank's Flight Recorder dump with its logs merged in)
// that an error of the same rank's logs ended: a LogEvent with `ends_op`
// (the error its pending op raised, LogEvent::ends_op) names the op it
// ended, and the dump, taken before it, still shows that op pending. Which
// op: a collective of the dump's own records, neither completed nor
// retired, at the event's seq (and pg) when the event names one; with no
// seq named, the rank's one pending collective (of the event's pg, when it
// names one): with two or more pending the op is not known and none is
// taken. An event older than the op (both times known) is of an earlier
// op. Returns indices into d.ops, ascending, each once; empty for a dump
// not from a Flight Recorder. Works on a cut dump too (pending collectives
// are never cut).
std::vector<size_t> OpsEndedByLogs(const model::RankDump& d);

// Marks the ops OpsEndedByLogs names failed: retired and not completed
// (the model's "ended by failing", which analyses read as timed out; gloo
// itself would count it completed, but the rank waited in it until it
// failed, and a wait it was part of, a cycle, must stay one), fills their
// timeout from the event where they lack one, and adds an info diagnostic
// per op naming the log line.
// `d` must be whole (ExpandDump a cut dump first: its history would still
// show the op pending). Returns how many ops it ended. Idempotent.
size_t EndOpsEndedByLogs(model::RankDump* d, model::DiagnosticSink* diags);

// True when two op names (as OpRecord::op holds them) name the same kind of
// collective, whatever the source spelled: "_allgather_base" = "all_gather"
// = "all_gather_into_tensor"; "barrier" = "all_reduce" (NCCL runs a barrier
// as a one-element all_reduce). Empty names agree with anything.
bool SameOpKind(std::string_view a, std::string_view b);

}  // namespace hangdx::ingest
