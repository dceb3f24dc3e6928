#include "hangdx/ingest/cross_rank.h"

#include "hangdx/ingest/cross_rank/log_completion.h"
#include "hangdx/ingest/cross_rank/pg_ranks.h"
#include "hangdx/ingest/cross_rank/plog_chain.h"

namespace hangdx::ingest {
namespace {

constexpr CrossRankPass kPasses[] = {
    {"nccl-anonymous-comms",
     "a rank's log without a communicator's Init line names it by size and order only; which communicator it is "
     "shows in the other ranks' logs (the one of that size they log and it does not)",
     MatchAnonymousNcclComms},
    {"nccl-log-completion",
     "an NCCL INFO line is printed at enqueue: an op is known finished only once every member's log shows a later "
     "one; after nccl-anonymous-comms, which names the communicators",
     [](model::Job* job, model::DiagnosticSink*) { DeriveNcclLogCompletion(job); }},
    {"pg-local-ranks",
     "a rank's place inside a pg is in that rank's own file (NCCL Init lines, HCCL group info); mapping another "
     "rank's wait on pg-local ranks, or a pg's members, takes every file",
     MapPgLocalRanks},
    {"hccl-plog-chains",
     "a notify wait on one NPU waits for a record on another: the chain runs through several ranks' plogs to its "
     "cause; after pg-local-ranks, which names the remote ranks globally",
     [](model::Job* job, model::DiagnosticSink*) { BuildPlogDeviceJob(job); }},
};

}  // namespace

std::span<const CrossRankPass> CrossRankPasses() { return kPasses; }

void InferAcrossRanks(model::Job* job) {
  model::DiagnosticSink diags;
  for (const CrossRankPass& pass : kPasses) pass.run(job, &diags);
  for (auto& d : diags.Take()) job->diagnostics.push_back(std::move(d));
}

}  // namespace hangdx::ingest
