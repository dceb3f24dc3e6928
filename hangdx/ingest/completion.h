// hangdx/ingest/completion.h
// Which ops of a Flight Recorder dump are known to have finished. A dump
// records each entry's `state` ("scheduled", "started", "completed"),
// `retired` and, per pg, pg_status.last_completed_collective; what that
// means for completion depends on the backend, so it is derived once per
// dump from all of them (DumpBuilder::Finish does, for every rank that
// RecordSink::SetFromFlightRecorder marked).
//
// Upstream: torch/csrc/distributed/c10d/FlightRecorder.cpp (entry state and
// retire_id), ProcessGroupNCCL.cpp (pg_status); gloo's behaviour measured
// on torch 2.13 (testdata/torch/README.md).
#pragma once

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Sets OpRecord::completed for every op of *dump: state "completed"; for
// gloo (which never moves `state` past "scheduled") `retired`; for other
// backends a collective seq at or below its pg's last_completed, and every
// op of a pg before a later completed one (NCCL runs a pg's ops in order on
// one stream). Never fails; idempotent.
void DeriveCompletion(model::RankDump* dump);

}  // namespace hangdx::ingest
