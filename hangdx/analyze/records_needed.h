// hangdx/analyze/records_needed.h
// Which records the rank-level analysis reads one by one, for dumps whose
// records ingest cut down (model::RankDump::history; ingest/compact.h).
//
// The analysis judges every (pg, seq) instance, but keeps and reads the
// records of an instance only when it is not plainly finished. An instance
// is plainly finished when every member with a dump recorded it with the
// same variant (op, sizes, dtypes), once, completed, and every member got
// past it: then no record of it changes a finding, whichever of them a cut
// kept. Every other instance needs the records of all its members:
//   - a seq at or after the lowest "last seq" of a member (someone has not
//     reached it, or a member without a dump may be to blame);
//   - a seq whose members' variants differ (a mismatch, or gather/scatter
//     roots that look different and match);
//   - a seq with an op not completed, or a member with two records of it.
// These are the problems and where the ranks stop: the records needed grow
// with what is wrong, not with the ring buffers' length.
//
//   ingest::ReadBack(&job, RecordsNeeded(job), threads);
//   Diagnosis d = Analyze(job);
#pragma once

#include <cstdint>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::analyze {

// Per dump of `job` (index into job.dumps): the positions (recording order,
// model::HistoryItem::pos) of the collectives the analysis reads that the
// dump does not hold, ascending. Empty for a dump that holds all its
// records. O(entries) time over the histories; memory per (pg, seq), not
// per entry. Never fails.
std::vector<std::vector<uint32_t>> RecordsNeeded(const model::Job& job);

}  // namespace hangdx::analyze
