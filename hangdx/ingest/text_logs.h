// hangdx/ingest/text_logs.h
// Entry point for text artifacts: NCCL debug logs, PyTorch c10d messages
// (watchdog timeouts, DETAIL mismatches), py-spy / gdb / faulthandler stack
// dumps, Ascend HCCL plogs, NCCL RAS status. Each format is sniffed from
// content. See docs/log-formats.md for the formats.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Parses one text file. Appends one RankDump per rank the file speaks about
// (rank from content where the log says it, else from `rank_hint`, the rank
// in the file name or -1), with ops, stacks and events. Returns false when the file is in no
// known text format (nothing appended). Problems become diagnostics.
bool ParseTextArtifact(std::string_view data, const std::string& file, int64_t rank_hint,
                       std::vector<model::RankDump>* out, std::vector<model::Diagnostic>* diags);

}  // namespace hangdx::ingest
