// hangdx/ingest/formats/wait_snapshot/wait_snapshot.h
// The "wait-snapshot" format, the simplest live report: a JSON object with
// one wait state per rank, as a health watchdog collects from every rank:
//
//   {"0": {"current_op": "all_reduce", "waiting_for_ranks": [3], "op_seq": 41},
//    "3": {"current_op": "checkpoint", "waiting_for_ranks": [], "op_seq": 40}}
//
// Each rank waits for all the ranks it lists (AND). Optional keys: "pg"
// (process group name, accepted for documentation), "wait_kind": "all" (default)
// or "any" (an any-source receive: an OR wait), "waited_ms" (how long the rank
// has waited so far) and "stall_after_ms" (from how long a wait is a hang,
// default 30000): without them a chain of waits is "waiting, not deadlocked".
//
// Upstream: no single producer; the shape hangdx's own docs and users'
// watchdogs write (README "Using it").
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {

// 80 when `data` starts with '{' or '[' and its first 4 KiB hold the key
// "waiting_for_ranks" or "current_op", else 0 (below a Flight Recorder
// JSON dump's keys: a dump that names them is a dump).
int SniffWaitSnapshot(std::string_view data);

// Reads a wait snapshot into `out`: per rank key, the rank's live wait
// (SetWait; waited-for ranks sorted, unique). A bad member (rank out of
// range, wrong types) is skipped with a warning naming its key. Returns
// false when nothing usable was found (not JSON, not an object of rank
// keys, no good member).
bool ParseWaitSnapshot(const Artifact& in, RecordSink* out);

}  // namespace hangdx::ingest
