// hangdx/ingest/cross_rank/log_completion.h
// Which operations read from NCCL debug logs are known to have finished.
//
// An NCCL INFO COLL line (`AllReduce: opCount 1a ... comm 0x.. [nranks=N]`,
// NVIDIA/nccl src/enqueue.cc) is printed when the op is enqueued on the
// host; no INFO line says that an op completed. So the parser leaves every
// op kScheduled, and this pass marks an op finished only where the logs of
// the whole job show it (rule in DeriveNcclLogCompletion).
#pragma once

#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Marks collective ops of NCCL-log communicators (pgs whose PgConfig::desc
// the NCCL log parser wrote as "NCCL communicator of N ranks...") completed
// (state kCompleted, retired) when every one of the N members logged a
// collective with a higher opCount on that communicator: op k of a
// communicator is enqueued by every member before anything later, so when
// all N members have moved past k on the host, none is missing from it and
// nothing of the job's logs shows it unfinished. Only collectives count:
// P2P ops advance a rank's opCount without the others, so their opCounts
// do not line up across ranks; P2P ops stay kScheduled. With fewer than N
// members' logs (a partial view) nothing is marked: whether an absent member
// got past k is unknown. A transport or device stall inside op k while all
// members had already enqueued k+1 shows at k+1 (the first op some member
// has not moved past), one op late. Never fails; idempotent.
void DeriveNcclLogCompletion(model::Job* job);

// A rank whose log lacks the Init line of a communicator names that
// communicator's ops "nccl-comm:n<N>#<k>" (NcclLogParser), which no other
// rank with Init lines uses. When such a pg is recorded by this rank alone,
// and exactly one N-rank communicator that other ranks log is absent from
// this rank, and this rank has exactly one such anonymous pg of size N, the
// ops are moved to that communicator (an info diagnostic to *diags says
// so); otherwise a warning says that the communicator of those ops is
// unknown.
// Call before DeriveNcclLogCompletion.
void MatchAnonymousNcclComms(model::Job* job, model::DiagnosticSink* diags);

// N from a description "NCCL communicator of N ranks..."; -1 otherwise.
int64_t NcclLogCommSize(std::string_view desc);

}  // namespace hangdx::ingest
