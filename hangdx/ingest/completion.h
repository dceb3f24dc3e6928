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

#include <map>
#include <set>
#include <string_view>

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Sets OpRecord::completed for every op of *dump: state "completed"; for
// gloo (which never moves `state` past "scheduled") `retired`; for other
// backends a collective seq at or below its pg's last_completed, and every
// op of a pg before a later completed one (NCCL runs a pg's ops in order on
// one stream). Never fails; idempotent.
void DeriveCompletion(model::RankDump* dump);

// The same for `ops` (one rank's, in recording order, or the ops from some
// op on to the last: the rules look only later), with the dump's pg_status.
// Ops is a container of model::OpRecord with reverse iterators.
template <typename Ops>
void DeriveCompletionOf(Ops* ops, const std::map<int64_t, model::PgStatus>& pg_status) {
  for (auto& op : *ops) {
    op.completed = op.state == model::OpState::kCompleted;
    // gloo's recorder never moves `state` past "scheduled"; the watchdog
    // retires a work item when it ends (successfully or not), and pg_status
    // can lag behind that. Measured on torch 2.13 (see testdata/torch).
    if (op.backend == "gloo") {
      // ...and its pg_status counts op_id (which P2P ops advance too), not
      // collective_seq_id: not comparable with an entry's seq.
      op.completed = op.completed || op.retired;
      continue;
    }
    if (!op.completed && !op.is_p2p && op.collective_seq >= 0) {
      auto it = pg_status.find(op.pg_id);
      if (it != pg_status.end() && op.collective_seq <= it->second.last_completed) op.completed = true;
    }
  }
  // NCCL runs a pg's ops in order on one stream: once a later op of the pg
  // completed, every earlier one did. This also settles batched P2P entries
  // (batch_isend_irecv), which stay "scheduled" forever because only the
  // group's closing entry gets an end event (pytorch/pytorch#137969).
  std::set<std::string_view> later_done;
  for (auto it = ops->rbegin(); it != ops->rend(); ++it) {
    if (it->backend == "gloo") continue;
    if (it->completed)
      later_done.insert(it->pg_name);
    else if (later_done.count(it->pg_name))
      it->completed = true;
  }
}

}  // namespace hangdx::ingest
