// bench/bench_job.h: generated input files for the hangdx benchmarks (jobs
// built in memory come from hangdx/model/testing: TrainingJob,
// DeviceJobBuilder).
#pragma once

#include <string>

namespace hangdx::bench {

// Path of a generated single-rank dump (rank 0 of a 1,024-rank job, 3 pgs,
// `entries` entries; `json` for the JSON flavour), generated on first use
// with scripts/synth/gen_dumps.py under $HANGDX_BENCH_DIR (default
// /tmp/hangdx-bench). Returns "" when generation failed.
std::string GeneratedDump(int entries, bool json);

// Path of a generated NCCL_DEBUG=INFO log of one rank, about `mb` MB
// (scripts/synth/gen_nccl_log.py), generated on first use under
// $HANGDX_BENCH_DIR. Returns "" when generation failed.
std::string GeneratedNcclLog(int mb);

// Reads a whole file ("" when it cannot).
std::string Slurp(const std::string& path);

}  // namespace hangdx::bench
