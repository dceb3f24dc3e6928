// hangdx/analyze/checks/latent_order.h
// The latent order-inversion check (failure-modes.md §6): all operations of
// all process groups must be issued in one consistent order on every rank.
// When two pgs share ranks and those ranks issue the pgs' collectives in
// different orders, the job deadlocks as soon as the two operations cannot
// run at the same time on a device (one AICPU slot, one host launch queue, a
// device-wide synchronization) -- even if this run happened not to hang.
//
// The check reads only history: per rank, the recording order of its
// collectives (Flight Recorder record ids, log line order). It never needs a
// hang, so it also finds the bug in healthy runs. Its findings have scope
// kHistory: no pass attaches cascades to them or counts them as explaining
// a hang.
#pragma once

#include <cstddef>
#include <vector>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/diagnosis.h"
#include "hangdx/model/history.h"
#include "hangdx/model/job.h"

namespace hangdx::analyze {

// Finds pairs of pgs (by pg name, same backend) recorded by two or more
// ranks whose collectives those ranks issue in different relative orders,
// within the window of seqs that every one of them recorded (ring buffers
// drop old entries). Returns at most `max_findings` findings, each of kind
// kOrderInversion, severity kWarning, hang false: pg_name/seq/op name the
// first collective whose position differs, `roles` the classes of ranks that
// agree on the order (the largest first: the reference; a tie goes to the
// class with the lowest rank), culprit_ranks the ranks outside the reference
// class, `details` the two orders in words and `evidence` the records (file,
// rank, record id) that prove them. P2P ops are not compared (their per-pg
// counters do not line up across ranks). Runs in O(total ops + pg pairs per
// rank x ranks); never fails.
std::vector<Finding> LatentOrderInversions(const model::Job& job, size_t max_findings = 8);

// The same, with the dumps' histories (model::Histories(job)) given.
std::vector<Finding> LatentOrderInversions(const model::Job& job,
                                           const std::vector<std::shared_ptr<const model::OpHistory>>& histories,
                                           size_t max_findings = 8);

// The table's latent_order row: LatentOrderInversions of the job.
void LatentOrderCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
