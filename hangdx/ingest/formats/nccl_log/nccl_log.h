// hangdx/ingest/formats/nccl_log/nccl_log.h
// Reader for NCCL debug logs (NCCL_DEBUG=INFO/TRACE, ideally with
// NCCL_DEBUG_SUBSYS including COLL): per-collective enqueue lines become
// OpRecords matched across ranks by communicator and opCount.
//
// Upstream: the line prefix `[ts] host:pid:tid [cudaDev] NCCL INFO|WARN ...`
// is NVIDIA/nccl src/debug.cc (ncclDebugLogV); the per-op line
// `AllReduce: opCount 1a sendbuff ... count N datatype D op O root R comm 0x..
// [nranks=N] stream 0x..` is src/enqueue.cc (ncclEnqueueCheck); the
// `comm 0x.. rank R nranks N ... commId 0x.. - Init COMPLETE` lines are
// src/init.cc. Versions: the enqueue line is the same text from NCCL 2.3 to
// 2.30; Init lines carry commId from 2.12 (earlier logs name communicators
// by pointer only, so their ops are matched by size and order). See
// docs/log-formats.md section 1.
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// 50 when `data` holds NCCL debug lines (` NCCL INFO `, ` NCCL WARN `, or a
// prefix-less `X: opCount N sendbuff` enqueue line). Cheap: substring search; else 0.
int SniffNcclLog(std::string_view data);

// Reads an NCCL debug log (one process, or several interleaved: each
// `host:pid` is one process) into `out`, records per rank.
// A process's rank: a peeled `[rankN]:`/slurm prefix, else its rank in its
// largest communicator (Init lines), else `in.rank_hint` when the file holds one
// process. Per enqueue line one OpRecord: pg_name = the communicator's commId
// ("0x..." from its Init line), or when no Init line names it
// "nccl-comm:n<nranks>#<k>" (the k-th such communicator of that size this
// process used: comm pointers differ per rank, creation order does not);
// collective_seq = opCount (hex); P2P (Send/Recv) sets p2p_seq instead.
// Every op is kScheduled, not completed: an enqueue line says nothing about
// completion (see ingest/cross_rank/log_completion.h for when an op is known finished).
// pg_config desc: "NCCL communicator of <nranks> ranks..."; every comm with a
// commId gets a PgConfig with self_local = this process's comm rank.
// WARN lines become LogEvents (CUDA failures kCrash, NCCL's own mismatch
// detector kMismatch, others kOther); `Abort COMPLETE` is kExit.
// Always returns true (a text format reads what it recognizes).
bool ParseNcclLog(const Artifact& in, RecordSink* out);

}  // namespace hangdx::ingest
