// hangdx/analyze/checks/named_culprit.h
// The named-culprit check: some producers analyse the job themselves and
// print whom to blame (model::LogEvent::Kind::kCulprit: PyTorch's desync
// report, Horovod's stall inspector, fr_trace's report, monitored_barrier,
// NCCL RAS; a kStall that lists the ranks that are ready, as Horovod's
// early stall line does). Their verdict becomes a finding with their lines as
// evidence, read from the event fields only (ranks, ready_ranks, pg, seq,
// op, waited_ms), never from which producer printed it:
//   - the named ranks, or the world without the ready ones, never joined:
//     missing_rank (a hang: the producer waited past its own threshold);
//     when every rank of the job is named (each lacks what another sent),
//     they issue different collectives: collective_mismatch; when the
//     lines of one printing (Horovod's one line per stalled tensor) split
//     the ranks into classes, the class smaller than every other is the
//     culprit (the odd one out), a tie names the tied classes as
//     candidates, one class names all;
//   - the named ranks joined but did not finish (they are among the ready
//     ones) and they are every member: the collective itself does not
//     progress, resource_deadlock with no culprit; only some: undecided;
//   - progress logged after the last report, or a reported wait under
//     kStallFactor (checks/rhythm.h) times the step time progress lines
//     report: the wait ended or is within the job's rhythm, a straggler
//     warning naming them (exit 0); successive printings that name
//     different ranks: the job is slow as a whole, a warning naming nobody.
//     A printing is a report's lines on consecutive lines of one file, each
//     after the first carrying no wait time of its own (no header).
// Ranks any line names as arrived at the same (pg, seq) count as ready (a
// desync report's snapshot lines); the ranks a report can name are at least
// 0 .. its highest, and for global ranks at least the job's world. A stall
// line naming nobody that heads a report (at most 3 lines above it) is that
// report's, its wait the report's.
// Stall warnings that name nobody (a vLLM shared-memory reader waiting, an
// NCCL kernel "may be hanging") are a hang only when one reporter repeats
// them with no progress in between: undecided, the reporters as candidates;
// a lone one is a warning that says why it is not a hang.
//
// What the other evidence says about the same hang is compared in
// passes/named_culprit_agreement.h.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

// The table's named_culprit row: one finding per (pg, seq) the reports name,
// and one for the stall warnings that name nobody. Never fails.
void NamedCulpritCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
