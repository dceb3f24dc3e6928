#include "hangdx/analyze/checks/missing_rank.h"

#include <algorithm>
#include <map>

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/lost_peer.h"
#include "hangdx/analyze/checks/rhythm.h"
#include "hangdx/analyze/stack_threads.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// True when one log given holds lines of several ranks (a job's combined
// stderr): there a rank's silence is its own.
bool CombinedLog(const model::Job& job) {
  std::map<std::string, Rank> rank_of_file;
  for (const auto& d : job.dumps) {
    auto [it, fresh] = rank_of_file.emplace(d.file, d.rank);
    if (!fresh && it->second != d.rank) return true;
  }
  return false;
}

// The absent ranks of one instance as this check words them.
struct Sides {
  std::vector<Rank> idle, dead, cascade;
  std::vector<Rank> empty;             // of dead: left a dump that records nothing (absent_ranks.h)
  std::vector<Rank> logged, unlogged;  // of idle: with some line in the logs given, without
  bool lost_peer = false;              // logs only: the waiters report a lost connection to a peer
};

Sides SidesOf(const RankAnalysis& a, const Instance& in, AbsentRanks absent) {
  Sides s{std::move(absent.idle), std::move(absent.dead), std::move(absent.cascade), std::move(absent.empty), {}, {}};
  s.lost_peer = !a.dump_based && ReportsLostPeer(a.job, in.arrived);
  if (!a.dump_based && s.idle.empty() && !s.lost_peer) {
    // Text logs only: every rank waiting in a collective logs its timeout,
    // so a rank that printed nothing is not waiting in it (or died
    // silently): it is absent, not known dead. Unless the waiters lost
    // their connection to a peer: then the silent rank's process ended.
    s.idle = std::move(s.dead);
    s.dead.clear();
  }
  // Of those, the ranks that have no line in the logs at all: their not
  // waiting is not shown, only that nothing of them was given.
  bool combined = CombinedLog(a.job);
  for (Rank r : s.idle) (!a.dump_based && !combined && !a.job.Find(r) ? s.unlogged : s.logged).push_back(r);
  return s;
}

// "their stacks show them in point-to-point calls (rank 0 in send, rank 1
// in recv), which gloo's Flight Recorder does not record" when every rank
// of `ranks` has a stack in send / recv / isend / irecv / batch_isend_irecv
// (the fresh-user tester's send_norecv: "never arrived and is not blocked in
// any recorded collective", then their send and recv stacks); "" otherwise.
std::string InP2pWords(const RankAnalysis& a, const std::vector<Rank>& ranks) {
  std::string where;
  for (Rank r : ranks) {
    const model::RankDump* d = a.job.Find(r);
    const model::StackSample* st = d ? SpeakingThread(*d) : nullptr;
    CollectiveCall c = st ? CollectiveIn(*st) : CollectiveCall{};
    if (!c.p2p()) return "";
    where += (where.empty() ? "" : ", ") + RankWords({r}) + " in " + c.op;
  }
  return std::string(ranks.size() == 1 ? "its stack shows it" : "their stacks show them") +
         " in point-to-point calls (" + where + "), which gloo's Flight Recorder does not record";
}

// Fills kind, culprits, severity, summary and fix hint, by the rules in the header.
void Decide(const RankAnalysis& a, const Instance& in, const Sides& s, Finding* f) {
  const Group& g = a.groups[in.group];
  size_t members = g.members.size();
  std::string where = g.Label() + " seq " + std::to_string(in.seq);
  std::string waits = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f->op + " (" + where;
  f->culprit_ranks = s.idle;
  f->hang = true;
  f->severity = Severity::kError;
  // No timeout yet, but a wait many times the job's usual step is a stall.
  Rhythm rhythm = RhythmOf(a, in);
  if (!rhythm.Words().empty()) f->details.push_back(rhythm.Words());
  if (!s.idle.empty() && in.all_in_flight && s.dead.empty() && !rhythm.Overdue()) {
    f->kind = Kind::kStraggler;
    f->hang = false;
    f->severity = Severity::kWarning;
    f->summary = "not a hang yet: " + RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f->op + " (" + where + ") for " +
                 RankWords(s.idle) + ", which " + Verb(s.idle, "has", "have") + " not arrived; no wait has timed out, so it may only be slow";
    f->fix_hint =
        "if this persists past the collective timeout it is a hang; otherwise profile the slow "
        "rank (data loading, host contention, a slow link)";
  } else if (!s.idle.empty() && s.logged.empty() && s.dead.empty() && !a.dump_based && EnqueuedOnly(a, in)) {
    // One rank's NCCL log and nothing of the others': an op line is printed
    // at enqueue, every log ends with one, and no timeout is logged, so
    // nothing shows a hang; the missing logs are what is known.
    f->kind = Kind::kUndecided;
    f->hang = false;
    f->severity = Severity::kWarning;
    f->candidates = f->culprit_ranks;
    f->culprit_ranks.clear();
    f->summary = RankWords(in.arrived) + "'s NCCL log ends in " + f->op + " (" + where + "), printed when it was " +
                 "enqueued, and no timeout is logged; " + RankWords(s.unlogged) + " left no log: nothing shows a hang";
    f->would_decide = "the logs of " + RankWords(s.unlogged) + " (or a timeout): the rank that never enqueued it";
    f->fix_hint = "collect every rank's log (NCCL_DEBUG=INFO) and the collective timeout's message, then rerun";
  } else if (!s.idle.empty()) {
    f->kind = Kind::kMissingRank;
    std::string no_line = RankWords(s.unlogged) + ", of which there is no line in the logs given";
    std::string p2p = InP2pWords(a, s.idle);
    f->summary =
        waits + ") for " +
        (a.dump_based       ? RankWords(s.idle) + ", which never arrived" +
                            (p2p.empty() ? " and " + std::string(Verb(s.idle, "is", "are")) +
                                               " not blocked in any recorded collective"
                                         : ": " + p2p)
         : s.logged.empty() ? no_line
                            : RankWords(s.logged) + ", which never arrived (its log shows no wait in it)" +
                                  (s.unlogged.empty() ? "" : ", and " + no_line));
    if (!s.dead.empty()) {
      f->summary += "; no dump from " + RankWords(s.dead);
      f->culprit_ranks.insert(f->culprit_ranks.end(), s.dead.begin(), s.dead.end());
    }
    // A helper thread of an absent rank died (a data loader's exception):
    // the rank is alive, and its main thread may wait for that thread. The
    // fix hint is about that when every absent rank's thread died.
    bool thread_died = !s.idle.empty();
    for (Rank r : s.idle) {
      const model::RankDump* d = a.job.Find(r);
      if (d && ThreadError(*d)) f->summary += "; " + ThreadErrorWords(r, *d);
      thread_died = thread_died && d && ThreadError(*d);
    }
    bool all_ended = !s.idle.empty();
    for (Rank r : s.idle) all_ended = all_ended && a.job.Find(r) && EndedByItself(*a.job.Find(r));
    f->fix_hint = !p2p.empty() ? "pair each send with the recv meant for it (peer, tag, size): the ranks blocked in "
                                 "send/recv never reach the collective the others wait in"
                  : all_ended ? "the absent rank's process ended while the others still wait: find why it left the "
                              "loop early (uneven data per rank, a rank-dependent break or return, a caught error)"
                  : thread_died
                      ? "fix the exception that ended the absent rank's thread (its traceback), and make the main "
                        "thread notice a dead helper (join it, or get from its queue with a timeout) instead of "
                        "waiting for it without end"
                      : "find what the absent rank is doing instead (py-spy dump it): a rank-dependent branch, "
                        "rank-0-only work (checkpoint, evaluation, logging) or uneven data";
  } else if (!s.dead.empty() && s.empty.size() == s.dead.size()) {
    // A rank that wrote a dump was alive: an empty one shows neither that
    // it died nor that it did not arrive (its Flight Recorder was off).
    f->kind = Kind::kUndecided;
    f->severity = Severity::kWarning;
    f->candidates = s.dead;
    f->culprit_ranks.clear();
    f->summary = waits + ") for " + RankWords(s.dead) + ", whose dump records nothing (no op, no process group: " +
                 "its Flight Recorder was off, or the file is empty): nothing shows that " + Verb(s.dead, "it", "they") +
                 " died or did not arrive";
    f->would_decide = "the logs of every rank (a crash of the waiting ranks' own, or where " + RankWords(s.dead) +
                      " is), or a dump of " + RankWords(s.dead) + " with its Flight Recorder on (TORCH_FR_BUFFER_SIZE)";
    f->fix_hint = "collect every rank's stderr; set TORCH_FR_BUFFER_SIZE on every rank";
  } else if (s.dead.size() * 2 <= members) {
    f->kind = Kind::kCrashedRank;
    f->culprit_ranks = s.dead;
    f->summary =
        waits + ") for " + RankWords(s.dead) +
        (s.lost_peer ? ", which stopped logging while they lost their connection to a peer" : ", which left no dump") +
        ": it most likely died (crash, OOM kill, exit)";
    f->fix_hint = "read the log of the dead rank for its exit cause (traceback, CUDA error, OOM killer in dmesg)";
  } else {
    f->kind = Kind::kUndecided;
    f->culprit_ranks = s.dead;
    f->severity = Severity::kWarning;
    f->summary = waits + "), but there is no dump from " + RankWords(s.dead) + " (" + std::to_string(s.dead.size()) +
                 " of " + std::to_string(members) + " members): cannot tell who is at fault";
    f->fix_hint = "collect the dumps of the missing ranks";
  }
  std::sort(f->culprit_ranks.begin(), f->culprit_ranks.end());
}

// The absent ranks' last records, a few arrived ranks' records, and where
// every absent rank is instead.
void AddEvidenceAndDetails(const RankAnalysis& a, const Instance& in, const Sides& s, Finding* f) {
  for (Rank r : s.idle) {
    const model::RankDump* d = a.job.Find(r);
    if (d && !d->ops.empty())
      AddOpEvidence(a, f, r, d->ops.back(), "last recorded op");
    else if (d)
      f->evidence.push_back({d->file, r, -1, "no op at this seq"});
    if (const model::LogEvent* e = d ? ThreadError(*d) : nullptr)
      f->evidence.push_back({e->file, r, -1, "line " + std::to_string(e->line) + ": thread " + e->thread + ": " + e->message});
  }
  for (size_t i = 0; i < in.arrived.size() && i < kEvidencePerSide; ++i)
    AddOpEvidence(a, f, in.arrived[i], a.DumpOf(in, in.arrived[i])->ops[in.ops(i).front()],
                  "arrived at seq " + std::to_string(in.seq));
  if (in.arrived.size() > kEvidencePerSide)
    f->evidence.push_back({"", -1, -1,
                           "... and " + std::to_string(in.arrived.size() - kEvidencePerSide) +
                               " more ranks arrived at seq " + std::to_string(in.seq)});
  for (Rank r : s.idle) {
    f->details.push_back(WhereInstead(a, r));
    const model::RankDump* d = a.job.Find(r);
    // The thread that speaks for the rank, not an idle helper listed first.
    if (const model::StackSample* st = d ? SpeakingThread(*d) : nullptr) f->details.push_back(StackWhere(r, *st));
  }
  for (Rank r : s.dead) f->details.push_back(WhereInstead(a, r));
  for (Rank r : s.cascade) f->details.push_back(WhereInstead(a, r) + " (blocked: see the other findings)");
  if (in.failed && a.LeadOp(in).backend == "gloo")
    f->details.push_back("gloo has ended the op (timed out or failed) on the ranks that called it");
  const Group& g = a.groups[in.group];
  if (!s.unlogged.empty() && g.inferred && a.world.inferred && g.name != "0" &&
      g.members.size() == static_cast<size_t>(a.world.size))
    f->details.push_back(g.Label() + " has " + std::to_string(g.members.size()) +
                         " members and no record names them: they are taken to be the whole world, whose size is "
                         "inferred, not given (if the job has more ranks, pass --world-size)");
}

Finding MissingFinding(const RankAnalysis& a, const Instance& in, AbsentRanks absent) {
  Sides s = SidesOf(a, in, std::move(absent));
  Finding f;
  FillPg(a, in, &f);
  f.op = a.LeadOp(in).op;
  f.roles.push_back({"arrived", in.arrived});
  if (!s.logged.empty()) f.roles.push_back({"never arrived", s.logged});
  if (!s.unlogged.empty()) f.roles.push_back({"no line in the logs given", s.unlogged});
  if (!s.dead.empty()) f.roles.push_back({"no dump", s.dead});
  if (!s.cascade.empty()) f.roles.push_back({"blocked elsewhere", s.cascade});
  Decide(a, in, s, &f);
  AddEvidenceAndDetails(a, in, s, &f);
  return f;
}

}  // namespace

void MissingRankCheck(const RankAnalysis& a, FindingSink* sink) {
  ForEachAbsent(a, AbsentRanks::Cause::kAbsent,
                [&](const Instance& in, AbsentRanks absent) { sink->Add(MissingFinding(a, in, std::move(absent))); });
}

}  // namespace hangdx::analyze
