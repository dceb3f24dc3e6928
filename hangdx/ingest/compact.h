// hangdx/ingest/compact.h
// Memory that grows with problems, not entries: a Flight Recorder dump's
// records are cut down, as soon as its file is read, to the few a report may
// show, and the rest of them live on in the dump's history
// (model/history.h: every op's pg, seq, variant, completion, compactly). The
// analysis reads histories for what spans all ops (the pgs a rank records,
// signature frequencies, the order of pgs) and full records only at the
// (pg, seq) instances that are not plainly finished; the few of those a cut
// dropped are read back from the file (ReadBack) before it runs.
//
//   CompactDump(&dump, {});                          // in the parser thread, after DumpBuilder::Finish
//   ...                                              // every file loaded, cross-rank passes run
//   ReadBack(&job, analyze::RecordsNeeded(job), 2);  // the records the analysis will read
//   analyze::Analyze(job, options);
//
// A rank whose records merge with another artifact's is expanded first
// (ExpandDump): merging matches records one by one.
#pragma once

#include <cstdint>
#include <vector>

#include "hangdx/ingest/artifact.h"
#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// How much of a dump a cut keeps beyond what it must.
struct CompactOptions {
  // Per pg, the collectives at its `tail` highest seqs are kept too: where
  // the ranks of a hung job stop, which the analysis reads, so that a cut
  // dump rarely needs a read-back.
  int tail = 4;
  // Dumps with fewer ops are left whole: a history costs more than they do.
  size_t min_ops = 0;
};

// Builds d->history from d->ops (every op, `completed` already derived)
// and keeps in d->ops, in recording order, only: the ops that are not
// collectives (P2P ops, ops without a seq), the collectives not completed,
// per pg the collectives at its `tail` highest seqs, and the rank's last
// op and last completed op; d->op_pos gets their positions. A no-op for a
// dump that was cut already or has fewer than options.min_ops ops. Never
// fails.
void CompactDump(model::RankDump* d, const CompactOptions& options);

// Reads the records at `needed[i]` (positions, any order, duplicates and
// positions already held allowed) of job->dumps[i] back from its file, in
// parallel on `threads` threads, and inserts them into its ops in
// recording order. A file that no longer holds the records it gave (it
// changed or went away since it was read) gets an error diagnostic in
// job->diagnostics and its dump is left as it was. `needed` may be shorter
// than job->dumps.
void ReadBack(model::Job* job, const std::vector<std::vector<uint32_t>>& needed, int threads);

// Reads every record of a cut dump back (see ReadBack) and clears its
// history: the dump is whole again. Problems go to *diags. Returns false
// (the dump unchanged) when the file no longer holds them. `cache`, the
// load's (may be null), spares re-parsing the pg_config every rank repeats.
bool ExpandDump(model::RankDump* d, model::DiagnosticSink* diags, RankListCache* cache = nullptr);

}  // namespace hangdx::ingest
