// hangdx/ingest/load.h
// Turns the paths a user gives (files and folders, searched recursively)
// into one model::Job: infers each file's rank from its name, reads files in
// parallel with the formats they are in (ReadArtifact, formats.h: sniffed
// from content, never the name), merges what several files say about one
// rank, and records every problem as a Diagnostic. Bad files never stop
// the load. What needs every rank at once is a separate step after it
// (InferAcrossRanks, cross_rank.h).
//
//   LoadOptions opt;
//   opt.threads = 8;
//   StatusOr<model::Job> job = LoadJob({"dumps/"}, opt);
//   if (job.ok()) InferAcrossRanks(&*job);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// How LoadJob reads: threads, rank overrides, limits, progress.
struct LoadOptions {
  int threads = 0;                         // 0: all cores
  std::map<std::string, int64_t> rank_of;  // file path -> rank (overrides the name)
  int64_t world_size = -1;                 // -1: infer
  uint64_t max_file_bytes = uint64_t{1} << 40;
  // Cut each Flight Recorder dump's records down as its file is read
  // (compact.h): memory then grows with problems, not entries. The caller
  // reads back what the analysis needs (ReadBack) before analyzing.
  bool compact = false;
  int compact_tail = 4;  // CompactOptions::tail of those cuts
  // With `compact`, a log's records (RecordSink::StreamOps: NCCL INFO
  // logs) are cut as they are read, each pg's first `log_head` and last
  // `log_tail` collectives held (DumpBuilder::StreamCut).
  int log_head = 4, log_tail = 64;
  // Called from the parser threads after each file with (files done, files
  // in all, bytes done); must be thread-safe. For progress bars.
  std::function<void(size_t, size_t, uint64_t)> progress;
};

// Infers the global rank from a dump's file name: the last run of digits of
// the base name once known extensions (.pkl .pickle .json .txt .log) are
// removed, e.g. "nccl_trace_rank_container-node02_5" -> 5,
// "fr_trace_rank_12.json" -> 12. Dates and times are not ranks:
// "train-2026-12-04.log" and "job_20261204-101500.log" give -1, and
// "rank3_2026-12-04" 3 (a "rank" label always wins). Returns -1 when the
// name ends in no digits.
int64_t RankFromFileName(const std::string& path);

// Ranks of dump files from their names: RankFromFileName for each, except
// that within one folder, when the last numbers collide (names like
// "rank_0_attempt_1", "rank_1_attempt_1") and another number position tells
// the files apart, that position is taken. -1 where a name has no number.
std::vector<int64_t> InferRanks(const std::vector<std::string>& files);

// Loads every path: one RankDump per rank (sorted, unique; the artifacts of
// one rank merged, ops by (pg, seq): merge.h), the device jobs, the input
// counts and every diagnostic in file order (model::DiagnosticSink's
// policy). Errors (kNotFound) only when no given path exists; an empty
// result with diagnostics is not an error. Thread-safe; deterministic
// whatever options.threads is.
StatusOr<model::Job> LoadJob(const std::vector<std::string>& paths, const LoadOptions& options);

}  // namespace hangdx::ingest
