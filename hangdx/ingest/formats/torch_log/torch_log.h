// hangdx/ingest/formats/torch_log/torch_log.h
// Reader for PyTorch c10d text: ProcessGroupNCCL watchdog timeouts and the
// PG-status lines that follow them, TORCH_DISTRIBUTED_DEBUG=DETAIL collective
// fingerprint mismatches, watchdog crashes (CUDA errors), terminate/exit
// lines, torchelastic failure lines, and Python tracebacks.
//
// Upstream: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
// (WorkNCCL::checkTimeout, watchdogHandler, logPrefix), ProcessGroupWrapper.cpp
// (CollectiveFingerPrint), c10/util/Logging.cpp (the `[rank3]:[E1218 ...
// file:line]` prefix), torch/distributed/elastic/multiprocessing/api.py.
// Versions: the watchdog line of torch <= 2.0 (no NumelIn/NumelOut) and
// later, both PG-status line forms, checked on torch 2.13 (testdata/torch). See docs/log-formats.md section 3.
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// 50 when `data` holds c10d lines: `ProcessGroupNCCL.cpp:`, `Watchdog
// caught`, `CollectiveFingerPrint(`, `Detected mismatch between
// collectives`, `ProcessGroupWrapper`, torchelastic `failed (exitcode:`, or a
// Python `Traceback (most recent call last):`. Else 0.
int SniffTorchLog(std::string_view data);

// Reads c10d text into `out`. Rank of a line: the
// `[rankN]:` prefix (global), else the `Rank N` of a default-pg prefix, else
// `in.rank_hint`. pg name: the PG GUID (or PG ID) the line names; a watchdog
// line that names none takes the pg of the following `failure detected by
// watchdog at work sequence id: N` / `Timeout at NCCL work: N` line of the
// same rank, else the default pg "0".
//  * Watchdog timeout -> OpRecord at (pg, SeqNum): op from OpType, sizes
//    {{NumelIn}} / {{NumelOut}}, retired, not completed, timeout_ms and
//    duration_ms; plus a LogEvent kTimeout.
//  * last enqueued / completed work -> RankDump::pg_status (numeric PG ID).
//  * DETAIL mismatch -> an OpRecord per named rank at SequenceNumber on pg
//    "0" (shape, dtype, op from the fingerprints) + LogEvent kMismatch;
//    `Running collective: CollectiveFingerPrint(...)` -> an OpRecord.
//  * CUDA errors, a watchdog that died of a non-timeout exception, segfaults,
//    uncaught exceptions -> kCrash; exits after a timeout, torchelastic
//    `failed (exitcode: N)` -> kExit.
//  * Python tracebacks -> StackSample (innermost first).
// Always returns true (a text format reads what it recognizes).
bool ParseTorchLog(const Artifact& in, RecordSink* out);

// PyTorch op name for a c10d OpType ("ALLREDUCE" -> "all_reduce").
std::string TorchOpName(std::string_view op_type);

}  // namespace hangdx::ingest
