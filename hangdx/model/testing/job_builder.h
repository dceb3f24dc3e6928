// hangdx/model/testing/job_builder.h
// Builds a rank-level model::Job in memory, in a few lines, for analysis
// tests, simulator tests and benchmarks: no file is parsed, so a test says
// exactly what each rank recorded. The one builder of rank-level jobs (the
// device-level one is device_job_builder.h).
//
// "8 ranks on pg 0; rank 3 is stuck before seq 41 (its last op is seq 40),
// the other ranks wait in seq 41":
//
//   model::testing::JobBuilder b("nccl");
//   for (model::Rank r = 0; r < 8; ++r) {
//     b.Steps(r, "0", 1, 40);                                      // seqs 1-40 done
//     if (r != 3) b.Coll(r, "0", 41, "all_reduce", /*done=*/false);  // waiting in 41
//   }
//   model::Job job = b.Members("0", model::testing::RankRange(0, 8)).Build();
//   // analyze::Analyze(job): missing_rank, culprit rank 3
//
// Each adder creates the rank's dump on first use (file "trace_<rank>",
// from a Flight Recorder dump) and returns the builder for chaining. Ops get
// record_id = their index in the rank's dump and increasing creation times
// (1000 ns, 1001 ns, ... across the whole job), so recording order is the
// order of the calls. Not thread-safe; a builder builds any number of jobs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::model::testing {

// The ranks first, first + 1, ..., end - 1 (empty when end <= first).
std::vector<Rank> RankRange(Rank first, Rank end);

class JobBuilder {
 public:
  // `backend` prefixes every profiling name ("gloo:all_reduce"). With
  // "gloo" a finished op keeps state kScheduled (gloo never sets state; its
  // completion is the retired flag), otherwise it gets kCompleted.
  explicit JobBuilder(std::string backend = "gloo") : backend_(std::move(backend)) {}

  // Rank r's dump, created on first use. The reference is valid until the
  // next call that creates a rank.
  RankDump& Rank(model::Rank r);

  // Appends collective `op` of pg `pg` at `seq` to rank r, with input and
  // output shape `shape` and dtype `dtype`, pg desc "default_pg" for pg "0"
  // and "undefined" otherwise, timeout 1000 ms. `done`: completed (and
  // retired); `retired` alone: left the ring buffer's live part unfinished.
  JobBuilder& Coll(model::Rank r, const std::string& pg, int64_t seq, const std::string& op, bool done = true,
                   Shape shape = {4, 4}, const std::string& dtype = "Float", bool retired = false);
  // Finished all_reduces at seqs from..to (inclusive) of pg `pg` on rank r.
  JobBuilder& Steps(model::Rank r, const std::string& pg, int64_t from, int64_t to);
  // Appends a P2P op named `name` ("send 0->1", "recv 1<-0": the
  // profiling-name form, group-local ranks) on pg `pg`, 100 elements.
  JobBuilder& P2P(model::Rank r, const std::string& pg, const std::string& name, bool done = false);
  // Every dump built records pg `pg` with these members (ranks known), also
  // dumps of ranks added after this call.
  JobBuilder& Members(const std::string& pg, std::vector<model::Rank> ranks);
  // Rank r is a wait snapshot's rank: it waits in `op` (seq `seq`, -1
  // unknown) for all of `for_ranks`; not from a Flight Recorder dump.
  JobBuilder& Wait(model::Rank r, const std::string& op, std::vector<model::Rank> for_ranks, int64_t seq = -1);
  // A stack sample of rank r, innermost frame first (frame names only), as
  // a py-spy dump "pyspy_rank<r>.txt" shows it; a rank with no ops is then
  // not from a Flight Recorder dump.
  JobBuilder& Stack(model::Rank r, std::vector<std::string> innermost_first);
  // A notable log line of rank r (file "rank<r>.log", line 3).
  JobBuilder& Event(model::Rank r, LogEvent::Kind kind, const std::string& msg);
  // Event `e` of rank r as given (the message catalogue's fields: ranks,
  // waited_ms, peer, ...); an empty file becomes "rank<r>.log", line -1
  // becomes the next line of that file.
  JobBuilder& Event(model::Rank r, LogEvent e);
  // Rank r's records come from its logs, not a Flight Recorder dump
  // (RankDump::from_flight_recorder false).
  JobBuilder& FromLog(model::Rank r);
  // The job's world size, as --world-size gives it (-1: unknown).
  JobBuilder& World(int64_t w);

  // The job: dumps sorted by rank, each with the pgs given to Members().
  Job Build() const;

 private:
  std::string backend_;
  Job job_;
  std::map<model::Rank, size_t> index_;  // rank -> job_.dumps
  std::vector<std::pair<std::string, std::vector<model::Rank>>> members_;
  int64_t clock_ = 0;
};

// A large training-style job for benchmarks and scale tests, built in
// memory: `ranks` ranks, each a member of `pgs` process groups (pg "0" = the
// world, then tp = blocks of 8, pp = stride 8 inside blocks of 64, cp =
// blocks of 2, ep = blocks of 16, etp = blocks of 4, dp = stride 64, emb =
// blocks of 32), each rank holding the last `ops_per_pg` collectives of
// every pg (NCCL style: completed and retired, except the last pg-0
// all_reduce, which is scheduled), seqs from 100000. One fault: rank
// `culprit` never issues that last all_reduce (missing_rank).
//
// Members are recorded in pg_config for groups of <= 64 ranks; larger groups
// (the world, dp) are left for the analysis to infer (ranks_known = false)
// and job.world_size is set, as `--world-size` would: a 100,000-entry member
// list per rank would need 100,000^2 integers in the model.
Job TrainingJob(int64_t ranks, int pgs, int ops_per_pg, int64_t culprit);

}  // namespace hangdx::model::testing
