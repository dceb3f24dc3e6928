#include "hangdx/analyze/checks/crashed_rank.h"

#include <algorithm>
#include <climits>
#include <set>

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/world.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

using model::LogEvent;

// How rank r's log says it died: "killed by SIGSEGV", "exit code 3", or the
// first crash line; with ", torchrun's first observed failure" when its
// launcher says it failed first. `signal` gets the fault signal, -1 none.
std::string DeathOf(const model::RankDump& d, int64_t* signal) {
  std::string line, how;
  bool first = false;
  *signal = -1;
  for (const auto& e : d.events) {
    if (e.kind != LogEvent::Kind::kCrash && !DiedUnexpectedly(e)) continue;
    first = first || e.exit_role == LogEvent::ExitRole::kFirstFailure;
    if (int64_t s = FaultSignal(e); s > 0 && *signal < 0) *signal = s;
    if (how.empty() && e.kind == LogEvent::Kind::kExit && e.exit_code > 0)
      how = "exit code " + std::to_string(e.exit_code);
    else if (how.empty() && e.kind == LogEvent::Kind::kExit && e.exit_code < 0)
      how = "ended by " + SignalName(-e.exit_code);  // SIGABRT: no fault signal, yet the first failure
    if (line.empty()) line = e.message;
  }
  if (*signal > 0) how = "killed by " + SignalName(*signal);
  if (how.empty()) how = line.size() > 160 ? line.substr(0, 157) + "..." : line;
  return how + (first ? ", torchrun's first observed failure" : "");
}

// The rank of `crashed` that failed first: the one its launcher calls the
// first observed failure, else the one whose crash line is the earliest
// when every one of them carries a time; -1 when the logs do not say.
model::Rank FirstToFail(const RankAnalysis& a, const std::vector<model::Rank>& crashed) {
  model::Rank earliest = -1;
  int64_t t_min = INT64_MAX;
  bool all_timed = true;
  for (model::Rank r : crashed) {
    int64_t t = INT64_MAX;
    for (const auto& e : a.job.Find(r)->events) {
      if (e.kind != LogEvent::Kind::kCrash && !DiedUnexpectedly(e)) continue;
      if (e.exit_role == LogEvent::ExitRole::kFirstFailure) return r;
      if (e.time_ns > 0) t = std::min(t, e.time_ns);
    }
    all_timed = all_timed && t != INT64_MAX;
    if (t < t_min) t_min = t, earliest = r;
  }
  return all_timed ? earliest : -1;
}

// True when every rank of `ranks` arrived at `in`.
bool Arrived(const Instance& in, const std::vector<model::Rank>& ranks) {
  for (model::Rank r : ranks)
    if (std::find(in.arrived.begin(), in.arrived.end(), r) == in.arrived.end()) return false;
  return !ranks.empty();
}

// True when nobody is seen waiting for the crashed ranks: every other rank
// crashed too or its log shows its process ended (an exit or stop record,
// an exception that ended it, not a timeout: a rank that timed out waited)
// with no op of its dump still pending, and every rank of the world left
// data. The job then failed; nothing hangs.
bool NobodyLeftWaiting(const RankAnalysis& a, const std::vector<model::Rank>& crashed) {
  if (!a.world.without_dump.empty()) return false;
  for (const auto& d : a.job.dumps) {
    if (std::binary_search(crashed.begin(), crashed.end(), d.rank) || a.Crashed(d.rank)) continue;
    bool ended = false;
    for (const auto& e : d.events) {
      if (IsTimeoutEvent(e)) return false;  // it waited for them until its timeout: a hang, ended by the timeout
      ended = ended || e.kind == LogEvent::Kind::kExit;
    }
    for (const auto& op : d.ops) ended = ended && (op.completed || op.retired);
    if (!ended) return false;
  }
  return true;
}

}  // namespace

Finding CrashedRankFinding(const RankAnalysis& a, const std::vector<model::Rank>& crashed, const Instance* in) {
  Finding f;
  f.kind = Kind::kCrashedRank;
  f.culprit_ranks = crashed;
  f.severity = Severity::kError;
  f.hang = true;
  std::string what;
  std::set<int64_t> signals;
  for (model::Rank r : crashed) {
    int64_t signal = -1;
    std::string how = DeathOf(*a.job.Find(r), &signal);
    if (what.empty()) what = how;
    signals.insert(signal);
    for (const auto& e : a.job.Find(r)->events) {
      if (e.kind != model::LogEvent::Kind::kCrash && !DiedUnexpectedly(e)) continue;
      f.evidence.push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message});
      if (!e.pg.empty() && f.pg_name.empty()) f.pg_name = e.pg;
    }
  }
  f.roles.push_back({"crashed", crashed});
  // Every rank the input shows died (all segfaulted): no rank waits for
  // another, and the one to look at is the first, when the logs say which.
  bool everyone = !in && crashed.size() >= 2 && crashed.size() == a.job.dumps.size();
  if (everyone) {
    model::Rank first = FirstToFail(a, crashed);
    int64_t signal = signals.size() == 1 ? *signals.begin() : -1;
    f.summary = "every rank seen crashed" + (signal > 0 ? " (killed by " + SignalName(signal) + ")" : "") + ": " +
                RankWords(crashed) + "; " +
                (first >= 0 ? "rank " + std::to_string(first) + " first (" + DeathOf(*a.job.Find(first), &signal) + ")"
                            : std::string("which one first the logs do not say"));
    if (first >= 0) {
      f.culprit_ranks = {first};
      f.roles.push_back({"first to crash", {first}});
    }
    f.fix_hint = "no rank waited for another: every process died by itself; fix the crash (the same fault on every "
                 "rank points at code or input they share, not at one rank)";
    f.hang = false;  // no rank waits: the job failed, it does not hang
    return f;
  }
  if (in && Arrived(*in, crashed)) {
    // The crashed ranks are the ones that arrived: they crashed in the op
    // by themselves, and the others' silence proves nothing.
    FillPg(a, *in, &f);
    f.op = a.LeadOp(*in).op;
    std::vector<model::Rank> absent = in->not_reached;
    absent.insert(absent.end(), in->no_dump.begin(), in->no_dump.end());
    std::sort(absent.begin(), absent.end());
    f.roles.push_back({"recorded nothing", absent});
    f.summary = RankWords(crashed) + " crashed by " + Verb(crashed, "itself", "themselves") + " in " + f.op + " (" +
                a.groups[in->group].Label() + " seq " + std::to_string(in->seq) + "): " + what + "; " +
                RankWords(absent) + " recorded nothing (" + Verb(absent, "its dump holds", "their dumps hold") +
                " no op): no evidence that " + Verb(absent, "it", "they") + " died or did not arrive";
  } else if (in) {
    FillPg(a, *in, &f);
    f.op = a.LeadOp(*in).op;
    f.roles.push_back({"waiting for it", in->arrived});
    f.summary = RankWords(in->arrived) + " " + Verb(in->arrived, "waits", "wait") + " in " + f.op + " (" +
                a.groups[in->group].Label() + " seq " + std::to_string(in->seq) + ") for " + RankWords(crashed) +
                ", which crashed: " + what;
  } else {
    // The ranks its launcher stopped because of it (torchrun's closing signal).
    std::vector<model::Rank> stopped;
    for (const auto& d : a.job.dumps)
      for (const auto& e : d.events)
        if (e.kind == LogEvent::Kind::kExit && e.exit_role == LogEvent::ExitRole::kStopped &&
            !std::count(crashed.begin(), crashed.end(), d.rank) && (stopped.empty() || stopped.back() != d.rank))
          stopped.push_back(d.rank);
    bool nobody_waits = NobodyLeftWaiting(a, crashed);
    f.summary = RankWords(crashed) + " crashed (" + what + "); " +
                (!stopped.empty()  ? "its launcher then stopped " + RankWords(stopped)
                 : nobody_waits    ? std::string("every other rank's process ended too: no rank is left waiting")
                                   : "the other ranks of its process groups wait for it in their next collective");
    if (!stopped.empty()) f.roles.push_back({"stopped by the launcher", stopped});
    // No rank is seen waiting (a stalled pg of a member, attached later by
    // passes/causes.h, makes it a hang again): the job failed.
    f.hang = !nobody_waits;
  }
  f.fix_hint = "fix the crash first (read the rank's traceback); the other ranks' timeouts are its consequence";
  return f;
}

void CrashedRankCheck(const RankAnalysis& a, FindingSink* sink) {
  ForEachAbsent(a, AbsentRanks::Cause::kCrashed,
                [&](const Instance& in, AbsentRanks absent) { sink->Add(CrashedRankFinding(a, absent.crashed, &in)); });
}

}  // namespace hangdx::analyze
