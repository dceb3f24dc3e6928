// hangdx/ingest/cross_rank.h
// The inference that needs every rank's records at once, run after loading
// (pipeline::Diagnose and pipeline::Stacks call it; LoadJob does not). A
// parser sees one file, so what one rank's file cannot say alone is settled
// here, in a short ordered table of passes (cross_rank.cc), each in
// cross_rank/:
//
//   nccl-anonymous-comms  a rank whose log lacks a communicator's Init line
//                         (cross_rank/log_completion.h)
//   nccl-log-completion   which NCCL-log ops every member has moved past
//   pg-local-ranks        pg-local ranks to global ones (cross_rank/pg_ranks.h)
//   hccl-plog-chains      notify-wait chains across NPUs (cross_rank/plog_chain.h)
//
//   StatusOr<model::Job> job = LoadJob(paths, options);
//   if (job.ok()) InferAcrossRanks(&*job);
#pragma once

#include <span>
#include <string_view>

#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// One pass over the whole job.
struct CrossRankPass {
  std::string_view name;
  std::string_view why;  // why it needs every rank (and what must run before it)
  // Updates *job; data problems go to *diags. Never fails.
  void (*run)(model::Job* job, model::DiagnosticSink* diags);
};

// The passes, in the order they run.
std::span<const CrossRankPass> CrossRankPasses();

// Runs every pass in order on *job (once: a second run would add a second
// plog device job) and appends their diagnostics to job->diagnostics.
// Never fails.
void InferAcrossRanks(model::Job* job);

}  // namespace hangdx::ingest
