// hangdx/ingest/formats/nccl_ras/nccl_ras.h
// Reader for the NCCL RAS status report (`ncclras` client text output, NCCL
// 2.24+): per-communicator MISMATCH blocks ("N ranks have launched up to
// operation X", "Rank R has launched up to operation X", "Rank R -- GPU ...")
// become per-rank OpRecords so the missing-rank analysis finds the ranks
// that have not launched the newest operation.
//
// Upstream: NVIDIA/nccl src/ras/client_support.cc (report templates),
// src/ras/client.cc; the text report of NCCL 2.24 and later (RAS appeared
// in 2.24). See docs/log-formats.md section 2.1.
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// 50 when `data` is an ncclras text report: a `Communicators` or `Job
// summary` heading together with a `#G-I (<16 hex>) ...` communicator heading
// or the communicator table header. Else 0.
int SniffNcclRas(std::string_view data);

// Reads an ncclras report into `out`: records for each rank of
// each communicator with per-function operation counts. pg_name = the comm
// hash (16 hex digits), members 0..size-1 (size from the communicators table
// "Ranks per comm"); per rank one OpRecord at collective_seq = the count it
// has launched up to, completed unless it is the highest count. Ranks not
// listed individually get the count of the group RAS did not list. Only
// communicators that span the whole job are read as global ranks; others
// give a diagnostic. Ranks RAS lists as missing or with errors become
// diagnostics / LogEvents (kCrash for errors).
// Always returns true (a text format reads what it recognizes).
bool ParseNcclRas(const Artifact& in, RecordSink* out);

}  // namespace hangdx::ingest
