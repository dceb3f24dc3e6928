#include "hangdx/analyze/passes/unexplained_timeout.h"

#include <algorithm>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// The torch.distributed collective a rank's traceback is in (the innermost
// distributed_c10d.py frame), "" if none.
std::string CollectiveInTraceback(const model::RankDump& d) {
  for (const auto& s : d.stacks)
    for (const auto& fr : s.frames)
      if (fr.filename.find("distributed_c10d.py") != std::string::npos && fr.name != "wrapper") return fr.name;
  return "";
}

// The ranks with data that report no timeout and lost no peer, ascending
// (`timed_out` is ascending: dumps come by rank). A rank whose connection
// to a peer closed was in the collective too (gloo's "Connection closed by
// peer" on the side that did not time out first).
std::vector<Rank> QuietRanks(const RankAnalysis& a, const std::vector<Rank>& timed_out) {
  using K = model::LogEvent::Kind;
  std::vector<Rank> out;
  for (const auto& d : a.job.dumps) {
    if (std::binary_search(timed_out.begin(), timed_out.end(), d.rank)) continue;
    bool in_it = std::any_of(d.events.begin(), d.events.end(),
                             [](const model::LogEvent& e) { return e.kind == K::kPeerLost || e.kind == K::kAbort; });
    if (!in_it) out.push_back(d.rank);
  }
  return out;
}

// Lines of the quiet ranks that say what they did instead: a thread's
// exception, a crash, an exit (one per rank, within the evidence bound).
void AddQuietEvidence(const RankAnalysis& a, const std::vector<Rank>& quiet, std::vector<Evidence>* lines) {
  using K = model::LogEvent::Kind;
  for (Rank r : quiet) {
    const model::RankDump* d = a.job.Find(r);
    if (!d || lines->size() >= 2 * kEvidencePerSide) return;
    for (const auto& e : d->events)
      if (e.kind == K::kThreadError || e.kind == K::kCrash || e.kind == K::kExit) {
        lines->push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
        break;
      }
  }
}

bool AnyWaitStateError(const FindingSink& sink) {
  for (const auto& e : sink.entries())
    if (e.scope == Scope::kWaitState && e.finding.severity == Severity::kError) return true;
  return false;
}

}  // namespace

void UnexplainedTimeoutPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  if (AnyWaitStateError(*sink)) return;
  std::vector<Rank> timed_out;
  std::vector<Evidence> lines;
  std::string op;
  for (const auto& d : a.job.dumps)
    for (const auto& e : d.events) {
      if (!IsTimeoutEvent(e)) continue;
      if (timed_out.empty() || timed_out.back() != d.rank) {
        timed_out.push_back(d.rank);
        if (lines.size() < kEvidencePerSide)
          lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
      }
      if (op.empty()) op = e.op.empty() ? CollectiveInTraceback(d) : e.op;
    }
  if (timed_out.empty()) return;
  Finding f;
  f.kind = Kind::kUndecided;
  f.severity = Severity::kError;
  f.hang = true;
  f.op = op;
  const std::vector<Rank>& missing = a.world.without_dump;
  // The silent ranks are the suspects only when they are fewer than the
  // ranks that timed out waiting: one timeout of seven ranks shows nothing
  // about the six others, and naming them would invent a culprit.
  if (missing.size() <= timed_out.size()) {
    f.culprit_ranks = missing;
    f.candidates = missing;
  }
  // With every rank seen, a rank whose data shows no timeout while the
  // others' collective timed out did not join it (or still waits under a
  // longer timeout): the suspects, under the same bound.
  std::vector<Rank> quiet;
  if (missing.empty()) quiet = QuietRanks(a, timed_out);
  if (!quiet.empty() && quiet.size() <= timed_out.size()) {
    f.culprit_ranks = quiet;
    f.candidates = quiet;
    AddQuietEvidence(a, quiet, &lines);
  } else {
    quiet.clear();
  }
  if (!missing.empty()) f.would_decide = "the logs or Flight Recorder dumps of " + RankWords(missing);
  f.roles.push_back({"timed out", timed_out});
  if (!missing.empty()) f.roles.push_back({"no log", missing});
  if (!quiet.empty()) f.roles.push_back({"no timeout", quiet});
  f.summary = RankWords(timed_out) + " " + Verb(timed_out, "reports", "report") + " a timed-out " +
              (op.empty() ? std::string("collective") : op) + ", but the data given does not show whom " +
              Verb(timed_out, "it waits", "they wait") + " for: " +
              (!missing.empty() ? "no log from " + RankWords(missing)
               : (!quiet.empty() ? "the timeouts name no peer; " + RankWords(quiet) + ", seen, " +
                                       Verb(quiet, "reports", "report") + " no timeout and likely never joined it"
                                 : std::string("the timeouts name no peer and no rank is missing among those seen")) +
                     (a.world.inferred ? " (world size unknown: pass --world-size)" : ""));
  f.evidence = std::move(lines);
  f.details.push_back("a collective times out when some member does not join it; the members that did are these");
  if (!quiet.empty())
    f.details.push_back("a rank in the collective times out with the others; one that reports no timeout was "
                        "elsewhere (its main thread's stack, e.g. py-spy dump, shows where)");
  f.fix_hint = !quiet.empty()  ? "look at what " + RankWords(quiet) + " did instead of the collective"
               : missing.empty() ? "collect the logs (or Flight Recorder dumps) of every rank of the job"
                               : "collect the log (or Flight Recorder dump) of the missing ranks: one of them "
                                 "never joined the collective";
  sink->Begin("unexplained_timeout", Scope::kWaitState);
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
