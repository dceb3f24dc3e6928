#include "hangdx/analyze/checks/named_culprit.h"

#include <algorithm>
#include <map>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/rhythm.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::LogEvent;
using model::Rank;

namespace {

// One message of a producer's verdict and the rank whose log printed it
// (-1: a log that names no rank).
struct Report {
  Rank reporter = -1;
  const LogEvent* e = nullptr;
};

using Key = std::pair<std::string, int64_t>;  // (pg, seq) the message names; ("", -1) none

bool NamesRanks(const LogEvent& e) {
  if (e.kind == LogEvent::Kind::kCulprit) return !e.ranks.empty() || !e.ready_ranks.empty();
  return e.kind == LogEvent::Kind::kStall && !e.ready_ranks.empty();
}

// The producers' verdicts by the (pg, seq) they name, in rank and line order.
std::map<Key, std::vector<Report>> CulpritReports(const model::Job& job) {
  std::map<Key, std::vector<Report>> out;
  for (const auto& d : job.dumps)
    for (const auto& e : d.events)
      if (NamesRanks(e)) out[{e.pg, e.seq}].push_back({d.rank, &e});
  for (const auto& e : job.job_events)  // a job-wide report: no reporting rank
    if (NamesRanks(e)) out[{e.pg, e.seq}].push_back({-1, &e});
  return out;
}

// A report's header: a stall line naming nobody that opens the block of a
// line naming ranks (Horovod's "One or more tensors were submitted ..."
// then "Stalled ranks:"): at most 3 lines above it in the same file.
bool HeadsAReport(const model::Job& job, const model::RankDump& d, const LogEvent& stall) {
  auto heads = [&](const LogEvent& e) {
    return &e != &stall && NamesRanks(e) && e.file == stall.file && e.line > stall.line && e.line - stall.line <= 3;
  };
  // The block may be the coordinator's (d) or, printed with no rank of its
  // own, a job-wide report's.
  return std::any_of(d.events.begin(), d.events.end(), heads) ||
         std::any_of(job.job_events.begin(), job.job_events.end(), heads);
}

// How long report `r` says the ranks waited: its own waited_ms, else that of
// the header line above it; -1 unknown.
int64_t WaitedMs(const model::Job& job, const Report& r) {
  if (r.e->waited_ms >= 0) return r.e->waited_ms;
  if (const model::RankDump* d = job.Find(r.reporter))
    for (const auto& e : d->events)
      if (e.kind == LogEvent::Kind::kStall && e.file == r.e->file && e.line < r.e->line && r.e->line - e.line <= 3)
        return e.waited_ms;
  return -1;
}

// True when `a` happened after `b`: a later timestamp, else a later line of
// the same file.
bool After(const LogEvent& a, const LogEvent& b) {
  if (a.time_ns > 0 && b.time_ns > 0) return a.time_ns > b.time_ns;
  return a.file == b.file && a.line > b.line;
}

// True when some rank logged normal progress after event `e`.
bool ProgressAfter(const model::Job& job, const LogEvent& e) {
  for (const auto& d : job.dumps)
    for (const auto& p : d.events)
      if (p.kind == LogEvent::Kind::kProgress && After(p, e)) return true;
  return false;
}

// How many ranks the reports speak of: 0 .. the highest rank a report
// names, and for global ranks at least the job's world (known or inferred;
// an inferred world may be smaller than what the reports name).
int64_t WorldSizeOf(const RankAnalysis& a, const std::vector<Report>& reports) {
  int64_t n = 0;
  bool pg_local = false;
  for (const Report& r : reports) {
    pg_local = pg_local || r.e->ranks_pg_local;
    for (const auto* list : {&r.e->ranks, &r.e->ready_ranks})
      for (Rank x : *list) n = std::max(n, x + 1);
  }
  if (pg_local) return n;
  if (a.world.size >= 0) return std::max(n, a.world.size);
  for (const auto& d : a.job.dumps) n = std::max(n, d.rank + 1);
  return n;
}

// The ranks any line of the job names as arrived at (pg, seq) (a status
// line of the same report, such as a desync report's "started" snapshot).
std::set<Rank> ReadyAt(const model::Job& job, const Key& key) {
  std::set<Rank> out;
  if (key.second < 0) return out;
  for (const auto& d : job.dumps)
    for (const auto& e : d.events)
      if (e.seq == key.second && e.pg == key.first) out.insert(e.ready_ranks.begin(), e.ready_ranks.end());
  for (const auto& e : job.job_events)
    if (e.seq == key.second && e.pg == key.first) out.insert(e.ready_ranks.begin(), e.ready_ranks.end());
  return out;
}

// The job's usual step time from its logs: the median step time that
// progress lines report (LogEvent::waited_ms of kProgress), ms; -1 none.
int64_t LoggedStepMs(const model::Job& job) {
  std::vector<int64_t> steps;
  for (const auto& d : job.dumps)
    for (const auto& e : d.events)
      if (e.kind == LogEvent::Kind::kProgress && e.waited_ms > 0) steps.push_back(e.waited_ms);
  if (steps.empty()) return -1;
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  return steps[steps.size() / 2];
}

// What the reports of one (pg, seq) say together.
struct Verdict {
  std::set<Rank> blamed;      // never joined, or joined and did not finish
  std::set<Rank> ready;       // named as arrived
  bool world_blamed = false;  // every rank of the world is blamed
  bool joined = false;        // the blamed ranks are among those that arrived
  bool rotating = false;      // two successive printings blame disjoint ranks
  // The blamed ranks of the last printing, by which of its lines blame them
  // (ranks blamed for the same tensors are one class), smallest class first;
  // one class when every line blames the same ranks.
  std::vector<std::vector<Rank>> classes;
  bool persistent = false;      // `blamed` are the ranks every printing blames; the others changed
  bool progress_after = false;  // normal progress was logged after the last report
  bool within_rhythm = false;   // the reported wait is under kStallFactor logged steps
  bool pg_local = false;
  int64_t waited_ms = -1;
};

// The ranks report `r` blames: those it names, else the world without the
// ready ones (Horovod's early stall line lists only who did submit).
std::set<Rank> BlamedBy(const Report& r, int64_t world) {
  if (!r.e->ranks.empty()) return {r.e->ranks.begin(), r.e->ranks.end()};
  std::set<Rank> out;
  // Past kMaxListedWorld the others are not listed one by one (world.h): a
  // ready list naming rank 16777215 must not blame 16 million ranks.
  if (world > kMaxListedWorld) return out;
  std::set<Rank> ready(r.e->ready_ranks.begin(), r.e->ready_ranks.end());
  for (Rank x = 0; x < world; ++x)
    if (!ready.count(x)) out.insert(x);
  return out;
}

// True when every rank of `ranks` has an op at (pg, seq) in the model: it
// joined the collective (a "joined but did not finish" list).
bool Arrived(const RankAnalysis& a, const Key& key, const std::set<Rank>& ranks) {
  if (key.second < 0) return false;
  for (const Instance& in : a.instances.list) {
    if (in.seq != key.second || (!key.first.empty() && a.groups[in.group].name != key.first)) continue;
    if (std::all_of(ranks.begin(), ranks.end(),
                    [&](Rank r) { return std::find(in.arrived.begin(), in.arrived.end(), r) != in.arrived.end(); }))
      return true;
  }
  return false;
}

// True when report `b` is printed with report `a`, the one before it: the
// same reporter's same file, on the same line (the items of one line), or
// on the next line with no header of its own (no wait time). Horovod prints
// one line per stalled tensor under one header: "T1 [missing ranks: 3]",
// "T2 [missing ranks: 0, 1, 2]" are one stall report, not two that blame
// different ranks; its early one-line reports each carry their wait and
// are separate reports.
bool SamePrinting(const Report& a, const Report& b) {
  if (a.reporter != b.reporter || a.e->file != b.e->file) return false;
  return b.e->line == a.e->line || (b.e->line == a.e->line + 1 && b.e->waited_ms < 0);
}

// The blamed ranks of one printing's lines (`each`, one set per line) in
// classes: ranks blamed by the same lines are one class; smallest first,
// then by lowest rank.
std::vector<std::vector<Rank>> Classes(const std::vector<std::set<Rank>>& each) {
  std::map<Rank, std::vector<size_t>> lines_of;
  for (size_t i = 0; i < each.size(); ++i)
    for (Rank r : each[i]) lines_of[r].push_back(i);
  std::map<std::vector<size_t>, std::vector<Rank>> by_lines;
  for (const auto& [r, lines] : lines_of) by_lines[lines].push_back(r);
  std::vector<std::vector<Rank>> out;
  for (auto& [lines, ranks] : by_lines) out.push_back(std::move(ranks));
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.size() != y.size() ? x.size() < y.size() : x.front() < y.front();
  });
  return out;
}

Verdict Judge(const RankAnalysis& a, const Key& key, const std::vector<Report>& reports) {
  Verdict v;
  int64_t world = WorldSizeOf(a, reports);
  // Per printing, the blamed set of each of its lines.
  std::vector<std::vector<std::set<Rank>>> printings;
  std::set<Rank> joined_ready;  // ready ranks that can show a blamed rank joined
  for (size_t i = 0; i < reports.size(); ++i) {
    const Report& r = reports[i];
    if (i == 0 || !SamePrinting(reports[i - 1], r)) printings.emplace_back();
    printings.back().push_back(BlamedBy(r, world));
    v.blamed.insert(printings.back().back().begin(), printings.back().back().end());
    v.ready.insert(r.e->ready_ranks.begin(), r.e->ready_ranks.end());
    // A line that lists only who is ready blames the others, never someone
    // who joined; its ready ranks (of one tensor) say nothing of another
    // line's blamed ranks.
    if (!r.e->ranks.empty()) joined_ready.insert(r.e->ready_ranks.begin(), r.e->ready_ranks.end());
    v.pg_local = v.pg_local || r.e->ranks_pg_local;
    v.waited_ms = std::max(v.waited_ms, WaitedMs(a.job, r));
  }
  std::set<Rank> before, always;  // the previous printing's blamed ranks; those every printing blames
  for (size_t p = 0; p < printings.size(); ++p) {
    std::set<Rank> now;
    for (const auto& line : printings[p]) now.insert(line.begin(), line.end());
    std::vector<Rank> common;
    std::set_intersection(before.begin(), before.end(), now.begin(), now.end(), std::back_inserter(common));
    if (p > 0 && !before.empty() && !now.empty() && common.empty()) v.rotating = true;
    if (p == 0) {
      always = now;
    } else {
      std::set<Rank> kept;
      std::set_intersection(always.begin(), always.end(), now.begin(), now.end(), std::inserter(kept, kept.end()));
      always = std::move(kept);
    }
    before = std::move(now);
  }
  // Ranks every printing blames while the others change: those are stuck
  // (a tensor still missing report after report), the others late in turn.
  if (printings.size() > 1 && !always.empty() && always.size() < v.blamed.size()) {
    v.blamed = always;
    v.persistent = true;
  }
  if (!v.persistent) v.classes = Classes(printings.back());
  v.world_blamed = world > 1 && static_cast<int64_t>(v.blamed.size()) == world;
  std::set<Rank> also_ready = ReadyAt(a.job, key);
  v.ready.insert(also_ready.begin(), also_ready.end());
  joined_ready.insert(also_ready.begin(), also_ready.end());
  v.joined =
      !v.blamed.empty() && (std::includes(joined_ready.begin(), joined_ready.end(), v.blamed.begin(), v.blamed.end()) ||
                            Arrived(a, key, v.blamed));
  v.progress_after = ProgressAfter(a.job, *reports.back().e);
  int64_t step_ms = LoggedStepMs(a.job);
  v.within_rhythm = step_ms > 0 && v.waited_ms >= 0 && v.waited_ms < kStallFactor * step_ms;
  return v;
}

// Every rank lacks what another submitted: they issue different
// collectives. When the report's lines split the ranks into classes (ranks
// 0-2 lack tensor A, rank 3 lacks B and C), the one class smaller than
// every other is the odd one out, the rank to look at first; a tie of the
// smallest classes decides nothing and names them as the candidates.
void MismatchOfClasses(const Verdict& v, const std::vector<Rank>& blamed, Finding* f) {
  f->kind = Kind::kCollectiveMismatch;
  f->summary = "every rank (" + FormatRanks(blamed) +
               ") waits for something another rank has not submitted: they issue different collectives";
  f->fix_hint =
      "make every rank issue the same collectives in the same order (a rank-dependent branch, "
      "rank-0-only work, uneven data)";
  if (v.classes.size() < 2) return;
  std::string split = "the report splits them in " + std::to_string(v.classes.size()) +
                      " groups, each lacking what another submitted: ";
  for (size_t i = 0; i < v.classes.size(); ++i) split += (i ? "; " : "") + RankWords(v.classes[i]);
  f->details.push_back(split);
  if (v.classes[0].size() < v.classes[1].size()) {
    f->culprit_ranks = v.classes[0];
    f->details.push_back(RankWords(v.classes[0]) + " " + Verb(v.classes[0], "is", "are") +
                         " the odd one out: the fewest ranks on another code path");
    return;
  }
  f->culprit_ranks.clear();
  for (const auto& c : v.classes)
    if (c.size() == v.classes[0].size()) f->candidates.insert(f->candidates.end(), c.begin(), c.end());
  std::sort(f->candidates.begin(), f->candidates.end());
  f->would_decide = "the stacks (py-spy dump) of one rank of each group: the group on the wrong code path";
}

// Kind, severity, culprits and words of the finding, by the rules in the header.
void Decide(const Verdict& v, Finding* f) {
  std::vector<Rank> blamed(v.blamed.begin(), v.blamed.end());
  f->severity = Severity::kError;
  f->hang = true;
  f->culprit_ranks = blamed;
  if (blamed.empty()) {
    // Only ready ranks listed, all of 0 .. the highest (or a world too
    // large to list): the ones it waits for are the others of a world
    // whose size nothing gives.
    f->kind = Kind::kUndecided;
    f->summary = "the report lists only the ranks that are ready (" + FormatRanks({v.ready.begin(), v.ready.end()}) +
                 "): which ranks it waits for depends on the world size, which nothing gives";
    f->would_decide = "the job's world size (pass --world-size): the ranks above the ready ones are the missing ones";
    f->fix_hint = "rerun with --world-size N";
  } else if (v.rotating) {
    f->kind = Kind::kStraggler;
    f->severity = Severity::kWarning;
    f->hang = false;
    f->culprit_ranks.clear();
    f->summary = "the ranks the reports name change from one report to the next (" + FormatRanks(blamed) +
                 " in all): the whole job is slow, no one rank holds it up";
    f->fix_hint = "look for what slows every rank in turn (network, storage, a shared host)";
  } else if (v.progress_after || v.within_rhythm) {
    f->kind = Kind::kStraggler;
    f->severity = Severity::kWarning;
    f->hang = false;
    f->summary = RankWords(blamed) + " " + Verb(blamed, "was", "were") +
                 " late to a collective the others waited in, but progress was logged after the report: slow, "
                 "not hung";
    f->fix_hint =
        "profile the late rank (rank-0-only work, data loading, a slow link); raise the stall warning "
        "time if it is expected";
  } else if (v.joined && v.world_blamed) {
    f->kind = Kind::kResourceDeadlock;
    f->culprit_ranks.clear();
    f->summary = "every rank (" + FormatRanks(blamed) +
                 ") joined the collective and none finished it: no rank is missing, the collective itself does "
                 "not progress";
    f->fix_hint =
        "look below the ranks: the transport (NCCL_DEBUG=INFO, link errors, IB/RoCE counters), a stuck "
        "GPU kernel, the communication library version";
  } else if (v.joined) {
    f->kind = Kind::kUndecided;
    f->summary = RankWords(blamed) +
                 " joined the collective and did not finish it; the report names no rank "
                 "that never joined";
    f->fix_hint = "collect the Flight Recorder dumps (or logs) of every rank: the ranks they wait for are missing";
  } else if (v.world_blamed) {
    MismatchOfClasses(v, blamed, f);
  } else {
    f->kind = Kind::kMissingRank;
    f->summary = RankWords(blamed) + " never joined the collective the other ranks wait in, as the report says";
    f->fix_hint =
        "find what the named rank does instead (py-spy dump it): a rank-dependent branch, rank-0-only "
        "work, uneven data, or a dead process";
  }
}

Finding ReportFinding(const RankAnalysis& a, const Key& key, const std::vector<Report>& reports) {
  Verdict v = Judge(a, key, reports);
  Finding f;
  f.pg_name = key.first;
  f.seq = key.second;
  f.op = reports.front().e->op;
  Decide(v, &f);
  f.ranks_are_pg_local = v.pg_local && !f.culprit_ranks.empty();
  f.roles.push_back({"named by the report", {v.blamed.begin(), v.blamed.end()}});
  if (!v.ready.empty()) f.roles.push_back({"ready", {v.ready.begin(), v.ready.end()}});
  if (v.persistent)
    f.details.push_back("every report names " + RankWords({v.blamed.begin(), v.blamed.end()}) +
                        "; the other ranks they name change from one report to the next (late in turn)");
  if (v.waited_ms >= 0)
    f.details.push_back("the report was printed after a wait of " + std::to_string(v.waited_ms / 1000) + " s");
  if (f.kind == Kind::kMissingRank && !v.progress_after)
    f.details.push_back(
        "no progress is logged after the report; if the job's steps take about as long as that "
        "wait, the named rank may only be slow");
  // One entry per line: the items of one line (a tensor each) share it.
  size_t lines = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    const LogEvent& e = *reports[i].e;
    if (i > 0 && reports[i - 1].e->file == e.file && reports[i - 1].e->line == e.line) continue;
    if (++lines <= kEvidencePerSide)
      f.evidence.push_back(
          {e.file, reports[i].reporter, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
  }
  if (lines > kEvidencePerSide)
    f.evidence.push_back({"", -1, -1, "... and " + std::to_string(lines - kEvidencePerSide) + " more report lines"});
  return f;
}

// True when rank dump `d` records an op of the pg stall `e` names: the
// wait is modelled as that op (a store-based barrier's), and the checks of
// collectives judge it.
bool WaitIsAnOp(const model::RankDump& d, const LogEvent& e) {
  if (e.pg.empty()) return false;
  return std::any_of(d.ops.begin(), d.ops.end(), [&](const model::OpRecord& op) { return op.pg_name == e.pg; });
}

// Stall warnings that name nobody, per reporter: a hang only when one
// reporter repeats them with no progress in between.
void UnnamedStalls(const model::Job& job, FindingSink* sink) {
  std::map<Rank, std::vector<const LogEvent*>> by_reporter;
  for (const auto& d : job.dumps)
    for (const auto& e : d.events)
      if (e.kind == LogEvent::Kind::kStall && e.ranks.empty() && e.ready_ranks.empty() && !HeadsAReport(job, d, e) &&
          !WaitIsAnOp(d, e))
        by_reporter[d.rank].push_back(&e);
  if (by_reporter.empty()) return;
  std::vector<Rank> repeated, reporters;  // ranks -1 (a log naming none) are not listed
  bool any_repeated = false;
  std::vector<Evidence> lines;
  for (const auto& [r, events] : by_reporter) {
    if (r >= 0) reporters.push_back(r);
    bool again = events.size() >= 2 && !ProgressAfter(job, *events.front());
    any_repeated = any_repeated || again;
    if (again && r >= 0) repeated.push_back(r);
    for (const LogEvent* e : events)
      if (lines.size() < kEvidencePerSide)
        lines.push_back({e->file, r, -1, "line " + std::to_string(e->line) + ": " + e->message.substr(0, 300)});
  }
  Finding f;
  f.kind = Kind::kUndecided;
  f.evidence = std::move(lines);
  if (any_repeated) {
    f.severity = Severity::kError;
    f.hang = true;
    f.candidates = repeated;
    f.culprit_ranks = repeated;
    f.summary =
        "the stall warnings repeat with no progress in between: the wait goes on (a hang), but the "
        "messages name no rank to blame";
    f.would_decide = "the stacks (py-spy dump) or Flight Recorder dumps of every rank: the rank that is elsewhere";
    f.fix_hint = "dump the stacks of every process: the one not waiting where the others wait is the culprit";
  } else {
    f.severity = Severity::kWarning;
    f.hang = false;
    f.summary =
        "a stall warning was printed once and names no rank: a slow step (compilation, loading), not "
        "shown to be a hang";
    f.fix_hint = "if the warning keeps repeating, dump the stacks of every process";
  }
  f.roles.push_back({"warned", reporters});
  sink->Add(std::move(f));
}

}  // namespace

void NamedCulpritCheck(const RankAnalysis& a, FindingSink* sink) {
  for (const auto& [key, reports] : CulpritReports(a.job)) sink->Add(ReportFinding(a, key, reports));
  UnnamedStalls(a.job, sink);
}

}  // namespace hangdx::analyze
