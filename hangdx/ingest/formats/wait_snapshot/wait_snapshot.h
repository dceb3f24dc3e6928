// hangdx/ingest/formats/wait_snapshot/wait_snapshot.h
// Reader for the simplest live-report format: a JSON object with one wait
// state per rank, as a health watchdog collects from every rank:
//
//   {"0": {"current_op": "all_reduce", "waiting_for_ranks": [3], "op_seq": 41},
//    "3": {"current_op": "checkpoint", "waiting_for_ranks": [], "op_seq": 40}}
//
// Each rank waits for all the ranks it lists (AND). Optional keys: "pg"
// (process group name, accepted for documentation), "wait_kind": "all" (default)
// or "any" (an any-source receive: an OR wait).
#pragma once

#include <string>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// True when `data` is a JSON object whose keys are ranks and whose values
// carry "waiting_for_ranks" or "current_op": the wait-snapshot format.
bool LooksLikeWaitSnapshot(std::string_view data);

// Parses a wait snapshot from `file` into one RankDump per rank. Bad members are skipped with a diagnostic naming the
// rank key; returns false when nothing usable was found.
bool ParseWaitSnapshot(std::string_view data, const std::string& file, std::vector<model::RankDump>* out,
                       std::vector<model::Diagnostic>* diags);

}  // namespace hangdx::ingest
