#include "hangdx/analyze/passes/unexplained_timeout.h"

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
  if (!missing.empty()) f.would_decide = "the logs or Flight Recorder dumps of " + RankWords(missing);
  f.roles.push_back({"timed out", timed_out});
  if (!missing.empty()) f.roles.push_back({"no log", missing});
  f.summary = RankWords(timed_out) + " " + Verb(timed_out, "reports", "report") + " a timed-out " +
              (op.empty() ? std::string("collective") : op) + ", but the data given does not show whom " +
              Verb(timed_out, "it waits", "they wait") + " for: " +
              (!missing.empty() ? "no log from " + RankWords(missing)
                                : std::string("the timeouts name no peer and no rank is missing among those seen") +
                                      (a.world.inferred ? " (world size unknown: pass --world-size)" : ""));
  f.evidence = std::move(lines);
  f.details.push_back("a collective times out when some member does not join it; the members that did are these");
  f.fix_hint = missing.empty() ? "collect the logs (or Flight Recorder dumps) of every rank of the job"
                               : "collect the log (or Flight Recorder dump) of the missing ranks: one of them "
                                 "never joined the collective";
  sink->Begin("unexplained_timeout", Scope::kWaitState);
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
