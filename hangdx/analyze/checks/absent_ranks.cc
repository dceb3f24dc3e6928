#include "hangdx/analyze/checks/absent_ranks.h"

#include <algorithm>
#include <set>

#include "hangdx/analyze/world.h"
#include "hangdx/model/history.h"

namespace hangdx::analyze {

namespace {

// The ranks a TORCH_DISTRIBUTED_DEBUG=DETAIL mismatch line proves were at
// this (pg, seq): ProcessGroupWrapper's check is itself a collective, and it
// compares the ranks in rank order up to the first that differs
// (verify_tensors), so "Rank a ..., but Rank b ..." puts ranks 0..max(a, b)
// in the check, b in another collective, not absent from it.
std::set<model::Rank> InADetailCheck(const RankAnalysis& a, const Instance& in) {
  std::set<model::Rank> out;
  const std::string& pg = a.groups[in.group].name;
  for (const auto& d : a.job.dumps)
    for (const auto& e : d.events) {
      if (e.kind != model::LogEvent::Kind::kMismatch || e.peer < 0 || e.seq != in.seq || e.pg != pg ||
          e.message.find("CollectiveFingerPrint(") == std::string::npos)
        continue;
      model::Rank top = std::min<model::Rank>(std::max<model::Rank>(d.rank, e.peer), 1 << 16);
      for (model::Rank x = 0; x <= top; ++x) out.insert(x);
    }
  return out;
}

bool EmptyFileOf(const model::Job& job, model::Rank r) {
  for (const auto& f : job.file_reads)
    if (f.rank == r && f.bytes == 0) return true;
  return false;
}

// The arrived ranks of `in` whose own logs report a crash, ascending.
std::vector<model::Rank> CrashedWaiters(const RankAnalysis& a, const Instance& in) {
  std::vector<model::Rank> out;
  for (model::Rank x : in.arrived)
    if (a.Crashed(x)) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

// True when rank r has a stack sample whose thread did not die and its log
// reports no crash: the fresh-user tester's c_stacks dumps of ranks 0-1
// with rank 2's faulthandler stack in broadcast (was "left no dump: it most
// likely died").
bool HasStackAndNoCrash(const RankAnalysis& a, model::Rank r) {
  const model::RankDump* d = a.job.Find(r);
  return d && !d->stacks.empty() && !a.Crashed(r) && d->events.empty();
}

}  // namespace

bool LeftNothing(const model::Job& job, model::Rank r) {
  const model::RankDump* d = job.Find(r);
  if (!d) return EmptyFileOf(job, r);
  if (RecordsNothing(*d)) return true;
  return d->ops.empty() && (!d->history || d->history->entries() == 0) && d->pg_config.empty() && !d->wait &&
         EmptyFileOf(job, r);
}

AbsentRanks ClassifyAbsent(const RankAnalysis& a, const Instance& in) {
  AbsentRanks r;
  std::set<model::Rank> checked = InADetailCheck(a, in);
  for (model::Rank x : in.not_reached) {
    if (checked.count(x)) {
      r.cascade.push_back(x);  // in another collective a log's mismatch report names
      continue;
    }
    RankNodeType t = a.BlockingType(x);
    // A rank whose dump records nothing is not shown to be elsewhere.
    if (t == RankNodeType::kIdle && LeftNothing(a.job, x)) t = RankNodeType::kNoDump;
    (t == RankNodeType::kIdle ? r.idle : t == RankNodeType::kNoDump ? r.dead : r.cascade).push_back(x);
  }
  for (model::Rank x : in.no_dump) {
    if (checked.count(x)) continue;
    // No record of its collectives but a stack, and no crash in its log:
    // it was alive when the stack was taken, elsewhere, not dead.
    (HasStackAndNoCrash(a, x) ? r.idle : r.dead).push_back(x);
  }
  std::sort(r.idle.begin(), r.idle.end());
  std::sort(r.dead.begin(), r.dead.end());
  for (model::Rank x : r.dead) {
    if (a.job.unreadable.count(x)) r.unreadable.push_back(x);
    if (a.Crashed(x)) r.crashed.push_back(x);
    if (LeftNothing(a.job, x)) r.empty.push_back(x);
  }
  if (r.idle.empty() && r.dead.empty()) {
    r.cause = AbsentRanks::Cause::kNone;  // a cascade: reported at its root
  } else if (!r.unreadable.empty() && r.idle.empty()) {
    r.cause = AbsentRanks::Cause::kUnreadable;
  } else if (!r.crashed.empty()) {
    r.cause = AbsentRanks::Cause::kCrashed;
  } else if (r.idle.empty() && r.empty.size() == r.dead.size() && !(r.crashed = CrashedWaiters(a, in)).empty()) {
    // The waiting ranks crashed by themselves (broadcast_object_list whose
    // receivers fail to unpickle) and the absent ranks recorded nothing:
    // the crash is the cause, not an absence nothing shows.
    r.cause = AbsentRanks::Cause::kCrashed;
    r.waiters_crashed = true;
  } else {
    r.cause = AbsentRanks::Cause::kAbsent;
  }
  return r;
}

void ForEachAbsent(const RankAnalysis& a, AbsentRanks::Cause cause,
                   const std::function<void(const Instance&, AbsentRanks)>& fn) {
  for (int i = 0; i < static_cast<int>(a.instances.list.size()); ++i) {
    const Instance& in = a.instances.list[i];
    if (!a.IsRoot(i) || in.mismatch) continue;
    AbsentRanks absent = ClassifyAbsent(a, in);
    if (absent.cause == cause) fn(in, std::move(absent));
  }
}

}  // namespace hangdx::analyze
