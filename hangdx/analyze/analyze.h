// hangdx/analyze/analyze.h
// The analysis: from a model::Job to a Diagnosis.
//
//  1. Process groups are resolved per rank (one name with different rank sets
//     on different ranks is two groups); gloo dumps record no members, so
//     they are inferred (default pg = the world; others = the ranks that
//     record them) and said to be inferred.
//  2. Per pg, every collective seq is matched across members through an
//     index (sorted per-rank lists, binary search: O(E log E) for E entries).
//     The reference for a (pg, seq) is the majority, never the first file;
//     one mismatch does not poison later seqs.
//  3. A wait-for graph: a (pg, seq) that some members reached waits for every
//     member that did not reach it (AND) -- through where that member is
//     blocked instead; a pending P2P op waits for its peer. Graph reduction
//     and strongly connected components give true deadlocks (cycles); ranks
//     that are waited on but are not blocked are root-cause candidates.
//  4. Findings, most important first, each with culprit ranks and evidence.
//
// Steps 1-3 build the read-only context (analyze/rank_analysis.h); the
// checks (analyze/checks/check.h, one file each, one table) turn it into
// findings; the passes (analyze/passes/pass.h) do what must read findings:
// cascades, the device-level engine's findings meeting the rank-level ones
// (passes/device_meets_rank.h), ordering, the verdict. docs/analysis.md §6
// maps every decision to its file.
//
// Deterministic: the result depends only on the Job, never on thread count
// or hash order. Thread-safe (no shared state).
#pragma once

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/model/job.h"

namespace hangdx::analyze {

struct AnalyzeOptions {
  // Treat a wait as a hang even without timeout evidence (no straggler
  // verdicts). Off by default.
  bool assume_timed_out = false;
};

// Analyzes `job`. Never fails: missing or contradictory evidence becomes an
// `undecided` finding or a diagnostic.
Diagnosis Analyze(const model::Job& job, const AnalyzeOptions& options = {});

}  // namespace hangdx::analyze
