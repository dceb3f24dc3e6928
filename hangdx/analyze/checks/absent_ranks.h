// hangdx/analyze/checks/absent_ranks.h
// Who among a root (pg, seq)'s absent members is a root cause, shared by the
// three checks that report such an instance. Each root instance without a
// mismatch goes to exactly one of them, by `cause`:
//   kUnreadable -> checks/unreadable.h   (waited-for dumps exist but could not be read)
//   kCrashed    -> checks/crashed_rank.h (a waited-for rank's log reports a crash; or the
//                  waiting ranks crashed by themselves while the absent ones recorded nothing)
//   kAbsent     -> checks/missing_rank.h (missing_rank, straggler, crashed_rank, undecided)
//   kNone       -> none: every absent member is blocked elsewhere (a cascade)
// The checks call ClassifyAbsent themselves instead of reading each other's
// findings.
#pragma once

#include <functional>
#include <vector>

#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

struct AbsentRanks {
  std::vector<model::Rank> idle;                 // not reached it and not blocked in anything recorded: elsewhere
  std::vector<model::Rank> dead;                 // no dump, or a log that reports a crash; ascending
  std::vector<model::Rank> cascade;              // not reached it, blocked in another stuck op
  std::vector<model::Rank> unreadable, crashed;  // of `dead`: dump unreadable; log reports a crash
  // Of `dead`: ranks that left a dump recording nothing (LeftNothing): a
  // rank that wrote a dump was alive, so an empty one is no evidence that it
  // died, nor that it did not arrive.
  std::vector<model::Rank> empty;
  // Cause kCrashed because the ranks that arrived crashed by themselves (their
  // own logs report it: an object that would not unpickle, an OOM) while every
  // absent rank recorded nothing: `crashed` then holds those arrived ranks.
  bool waiters_crashed = false;
  enum class Cause { kNone, kUnreadable, kCrashed, kAbsent } cause = Cause::kNone;
};

// True when rank `r` left a Flight Recorder dump that records nothing
// (RecordsNothing in world.h: the recorder was off), or an empty file of its
// own (a dump cut off as it was written) and no op: such a rank was alive to
// write it and says nothing of where it is.
bool LeftNothing(const model::Job& job, model::Rank r);

// Ranks that a TORCH_DISTRIBUTED_DEBUG=DETAIL mismatch line of this (pg,
// seq) compared ("Rank a ..., but Rank b ...": ranks 0 to max(a, b)) are in
// another collective, not absent: they count as `cascade`, and
// checks/reported_mismatch.h reports the line.
AbsentRanks ClassifyAbsent(const RankAnalysis& a, const Instance& in);

// Calls `fn` for each root instance without a mismatch whose absent ranks
// have cause `cause`, in instance order.
void ForEachAbsent(const RankAnalysis& a, AbsentRanks::Cause cause,
                   const std::function<void(const Instance&, AbsentRanks)>& fn);

}  // namespace hangdx::analyze
