#include "hangdx/analyze/checks/reported_mismatch.h"

#include <algorithm>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::LogEvent;
using model::Rank;

bool ReportedAMismatch(const model::Job& job, Rank r) {
  const model::RankDump* d = job.Find(r);
  return d && std::any_of(d->events.begin(), d->events.end(),
                          [](const LogEvent& e) { return e.kind == LogEvent::Kind::kMismatch; });
}

namespace {

bool Has(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

// A message about the bytes, dtypes or shapes of one collective that every
// side called (a receiver got more bytes than it posted), by its catalogue
// row or, for a format's own lines (no row id), by its words; any other
// mismatch may be a different collective.
bool AboutSizes(const LogEvent& e) {
  // The analyzer's error type, where the message names one, decides.
  if (!e.error.empty()) return e.error == "SIZE_OR_SYNTAX_MISMATCH" || e.error == "COLLECTIVE_DTYPE_MISMATCH";
  for (const char* word : {"size", "dtype", "shape", "truncated", "ib_collective_mismatch", "io_mismatch"})
    if (Has(e.message_id, word)) return true;
  if (!e.message_id.empty()) return false;
  for (const char* words : {"Received data size", "message truncated", "local size", "Mismatched data types",
                            "tensor shapes", "tensor of shape", "Input/output mismatch"})
    if (Has(e.message, words)) return true;
  // DETAIL's "Collectives differ in the following aspects:" names each one.
  return Has(e.message, "differ in the following aspects") && !Has(e.message, "Op type") &&
         !Has(e.message, "Sequence number");
}

// A check that compares the ranks' ops before the op runs and raises on
// every rank (TORCH_DISTRIBUTED_DEBUG=DETAIL, Horovod's coordinator): the
// job fails fast instead of hanging.
bool RaisedBeforeTheOp(const LogEvent& e) {
  return e.message_id.rfind("torch.detail.", 0) == 0 || e.message_id.rfind("horovod.mismatch.", 0) == 0 ||
         (e.message_id.empty() && Has(e.message, "Detected mismatch between collectives"));
}

// The part of a message worth quoting in a summary: without source paths in
// brackets ("[enforce fail at /path/pair.cc:456] ") and a leading "what():",
// at most 140 characters (the evidence keeps the whole line).
std::string Quote(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    size_t close = message[i] == '[' ? message.find(']', i) : std::string::npos;
    if (close != std::string::npos && message.substr(i, close - i).find('/') != std::string::npos) {
      i = close + (close + 1 < message.size() && message[close + 1] == ' ' ? 1 : 0);
      continue;
    }
    out += message[i];
  }
  if (out.rfind("what():", 0) == 0) out.erase(0, 7);
  size_t start = out.find_first_not_of(' ');
  out = start == std::string::npos ? "" : out.substr(start);
  return out.size() > 140 ? out.substr(0, 137) + "..." : out;
}

// What the reporters' logs say, gathered over every rank.
struct Reports {
  std::vector<Rank> reporters, aborted;
  std::set<Rank> named;  // global ranks a message names as culprits
  std::set<Rank> sides;  // the other side a message compares its rank with (DETAIL's "but Rank 7 is running")
  std::vector<Evidence> lines;
  std::string pg, op, first;
  int64_t seq = -1;  // the first message's collective seq, -1 none
  bool sizes_only = true;
  bool raised_only = true;  // every message is RaisedBeforeTheOp's
  bool job_wide = false;    // some message is a job-wide report's (Job::job_events)
  // fr_trace's COLLECTIVE_STATE_MISMATCH reports: the same call, different
  // states (IsStateMismatch); not a mismatch of calls, kept apart.
  std::vector<const LogEvent*> states;
};

// True for a report that the ranks agree on a collective and differ only in
// how far it got (fr_trace's Op.match: same type, sizes and dtypes, another
// state), which no rank's control flow explains.
bool IsStateMismatch(const LogEvent& e) { return e.error == "COLLECTIVE_STATE_MISMATCH"; }

// Adds mismatch event `e`, printed by `reporter` (-1: a job-wide report), to
// *rep; the reporter is never among the ranks it names.
void Note(const LogEvent& e, Rank reporter, Reports* rep) {
  if (!e.ranks_pg_local) rep->named.insert(e.ranks.begin(), e.ranks.end());
  if (e.peer >= 0 && e.peer != reporter) rep->sides.insert(e.peer);
  rep->sizes_only = rep->sizes_only && AboutSizes(e);
  rep->raised_only = rep->raised_only && reporter >= 0 && RaisedBeforeTheOp(e);
  if (rep->pg.empty()) rep->pg = e.pg;
  if (rep->op.empty()) rep->op = e.op;
  if (rep->seq < 0) rep->seq = e.seq;
  if (rep->first.empty()) rep->first = Quote(e.message);
  if (rep->lines.size() < kEvidencePerSide)
    rep->lines.push_back({e.file, reporter, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
}

Reports Gather(const RankAnalysis& a) {
  Reports rep;
  for (const auto& d : a.job.dumps) {
    bool reported = false;
    for (const auto& e : d.events)
      if (e.kind == LogEvent::Kind::kMismatch && IsStateMismatch(e)) {
        rep.states.push_back(&e);
      } else if (e.kind == LogEvent::Kind::kMismatch) {
        reported = true;
        Note(e, d.rank, &rep);
      }
    if (!reported || d.rank < 0) continue;
    rep.reporters.push_back(d.rank);
    if (a.Crashed(d.rank)) rep.aborted.push_back(d.rank);
  }
  // A job-wide report (the Flight Recorder analyzer's "Collective ... has
  // errors") has no reporting rank: only the ranks it names count.
  for (const auto& e : a.job.job_events)
    if (e.kind == LogEvent::Kind::kMismatch && IsStateMismatch(e)) {
      rep.states.push_back(&e);
    } else if (e.kind == LogEvent::Kind::kMismatch && !e.ranks_pg_local) {
      Note(e, -1, &rep);
      rep.job_wide = true;
    }
  for (Rank r : rep.reporters) rep.named.erase(r);
  return rep;
}

// The finding for reports of states alone (IsStateMismatch): the ranks
// called the same collective, one finished it and the reference (the
// analyzer's first dump) did not, or the other way round. The dumps may have
// been taken at different moments, one rank's watchdog may not have seen
// the op end, or the transport finished one side only: nothing says which
// rank is stuck. So it is undecided between the ranks the report names and
// the reference, taken as the lowest rank of the world it does not name
// (the analyzer's first dump when every rank's dump was given; pg ranks
// beyond the default pg are not known from the text).
Finding StateMismatchFinding(const RankAnalysis& a, const std::vector<const LogEvent*>& states) {
  Finding f;
  f.kind = Kind::kUndecided;
  f.severity = Severity::kError;
  f.hang = true;
  const LogEvent& first = *states.front();
  f.pg_name = first.pg;
  f.op = first.op;
  f.seq = first.seq;
  std::set<Rank> named;
  for (const LogEvent* e : states)
    if (!e->ranks_pg_local) named.insert(e->ranks.begin(), e->ranks.end());
  std::set<Rank> candidates(named);
  for (Rank r = 0; r < a.world.size && r < kMaxListedWorld; ++r)
    if (!named.count(r)) {
      candidates.insert(r);
      f.roles.push_back({"the reference (the lowest rank the report does not name)", {r}});
      break;
    }
  f.candidates.assign(candidates.begin(), candidates.end());
  f.culprit_ranks = f.candidates;
  if (!named.empty()) f.roles.push_back({"named by the report", std::vector<Rank>(named.begin(), named.end())});
  f.summary = "a job-wide report says that the ranks of pg " + (first.pg.empty() ? std::string("?") : first.pg) +
              " called the same collective" + (first.seq >= 0 ? " (seq " + std::to_string(first.seq) + ")" : "") +
              " but recorded different states for it (COLLECTIVE_STATE_MISMATCH): \"" + Quote(first.message) +
              "\"; that is no mismatch of calls, and it does not say which rank is stuck";
  f.would_decide =
      "the ranks' Flight Recorder dumps taken at the same moment (or their stacks): the rank still inside the "
      "collective while the other finished is where to look; with TORCH_NCCL_ENABLE_TIMING=1 'started' tells a rank "
      "that never launched it from one that waits in it";
  for (const LogEvent* e : states)
    if (f.evidence.size() < kEvidencePerSide)
      f.evidence.push_back({e->file, -1, -1, "line " + std::to_string(e->line) + ": " + e->message.substr(0, 300)});
  f.fix_hint = "dump every rank at the same moment and look at the one still in the collective";
  return f;
}

}  // namespace

void ReportedMismatchCheck(const RankAnalysis& a, FindingSink* sink) {
  for (const auto& in : a.instances.list)
    if (in.mismatch) return;  // the records show both sides: collective_mismatch reports it
  Reports rep = Gather(a);
  if (rep.reporters.empty() && !rep.job_wide) {
    if (!rep.states.empty()) sink->Add(StateMismatchFinding(a, rep.states));
    return;
  }
  Finding f;
  f.kind = rep.sizes_only ? Kind::kSizeMismatch : Kind::kCollectiveMismatch;
  f.severity = Severity::kError;
  f.hang = !rep.raised_only;  // else the collective cannot complete: the job stops at it
  f.pg_name = rep.pg;
  f.op = rep.op;
  f.seq = rep.seq;
  f.culprit_ranks.assign(rep.named.begin(), rep.named.end());
  if (!rep.reporters.empty()) f.roles.push_back({"reported the mismatch", rep.reporters});
  if (!rep.aborted.empty()) f.roles.push_back({"aborted on it", rep.aborted});
  std::string what = rep.sizes_only ? "the ranks of a collective disagree on its sizes or dtypes"
                                    : "the ranks of a process group call different collectives";
  f.summary = (rep.reporters.empty() ? std::string("a job-wide report says")
                                     : RankWords(rep.reporters) + " " + Verb(rep.reporters, "reports", "report")) +
              " that " + what + (rep.pg.empty() ? "" : " (pg " + rep.pg + ")") + ": \"" + rep.first + "\"";
  if (!rep.aborted.empty()) f.summary += "; " + RankWords(rep.aborted) + " aborted on it";
  if (f.culprit_ranks.empty() && !rep.sides.empty()) {
    // Two sides compared, no majority: either may be the one that differs.
    std::set<Rank> both(rep.sides);
    both.insert(rep.reporters.begin(), rep.reporters.end());
    f.candidates.assign(both.begin(), both.end());
    f.roles.push_back({"the other side", std::vector<Rank>(rep.sides.begin(), rep.sides.end())});
    f.summary += "; it compares " + RankWords(f.candidates) + " and cannot tell which of them differs";
    f.would_decide =
        "the op the pg's other ranks call at that point (their Flight Recorder dumps or logs): the side they are on "
        "is the reference";
  } else if (f.culprit_ranks.empty()) {
    for (const auto& d : a.job.dumps)
      if (std::find(rep.reporters.begin(), rep.reporters.end(), d.rank) == rep.reporters.end())
        f.candidates.push_back(d.rank);
    for (Rank r : a.world.without_dump) f.candidates.push_back(r);
    std::sort(f.candidates.begin(), f.candidates.end());
    f.summary += "; the message does not name the rank that differs";
    f.would_decide =
        "the Flight Recorder dumps (or TORCH_DISTRIBUTED_DEBUG=DETAIL logs) of the pg's ranks at that collective: "
        "the rank whose op, sizes or dtypes differ from the others'";
  }
  if (rep.sides.empty() && !rep.reporters.empty())
    f.details.push_back(
        "the rank that reports a mismatch is the one that noticed it (a receiver given more bytes than it posted): "
        "it is a victim, not the rank that differs");
  f.evidence = std::move(rep.lines);
  f.fix_hint = rep.sizes_only ? "make the tensors of this collective the same shape and dtype on every rank"
                              : "make every rank of the pg issue the same collectives in the same order: look for a "
                                "rank-dependent branch or uneven data";
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
