// bench/bench_job.h: helpers shared by the hangdx benchmarks.
#pragma once

#include <cstdint>
#include <string>

#include "hangdx/model/job.h"

namespace hangdx::bench {

// Builds a model::Job in memory (no files): `ranks` ranks, each a member of
// `pgs` process groups (pg "0" = the world, then tp = blocks of 8, pp = stride
// 8 inside blocks of 64, cp = blocks of 2, ep = blocks of 16, etp = blocks
// of 4, dp = stride 64, emb = blocks of 32), each rank holding the last
// `ops_per_pg` collectives of every pg (NCCL style: completed and retired,
// except the last pg-0 all_reduce, which is scheduled). One fault: rank
// `culprit` never issues that last all_reduce (missing_rank).
//
// Members are recorded in pg_config for groups of <= 64 ranks; larger groups
// (the world, dp) are left for the analysis to infer (ranks_known = false) and
// job.world_size is set, as `--world-size` would: a 100,000-entry member list
// per rank would need 100,000^2 integers in the model.
model::Job MakeJob(int64_t ranks, int pgs, int ops_per_pg, int64_t culprit);

// Path of a generated single-rank dump (rank 0 of a 1,024-rank job, 3 pgs,
// `entries` entries; `json` for the JSON flavour), generated on first use
// with scripts/synth/gen_dumps.py under $HANGDX_BENCH_DIR (default
// /tmp/hangdx-bench). Returns "" when generation failed.
std::string GeneratedDump(int entries, bool json);

// Reads a whole file ("" when it cannot).
std::string Slurp(const std::string& path);

}  // namespace hangdx::bench
