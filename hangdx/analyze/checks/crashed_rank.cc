#include "hangdx/analyze/checks/crashed_rank.h"

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/world.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

Finding CrashedRankFinding(const RankAnalysis& a, const std::vector<model::Rank>& crashed, const Instance* in) {
  Finding f;
  f.kind = Kind::kCrashedRank;
  f.culprit_ranks = crashed;
  f.severity = Severity::kError;
  f.hang = true;
  std::string what;
  for (model::Rank r : crashed) {
    for (const auto& e : a.job.Find(r)->events) {
      if (e.kind != model::LogEvent::Kind::kCrash && !DiedUnexpectedly(e)) continue;
      if (what.empty()) what = e.message;
      f.evidence.push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message});
      if (!e.pg.empty() && f.pg_name.empty()) f.pg_name = e.pg;
    }
  }
  if (what.size() > 160) what = what.substr(0, 157) + "...";
  f.roles.push_back({"crashed", crashed});
  if (in) {
    FillPg(a, *in, &f);
    f.op = a.LeadOp(*in).op;
    f.roles.push_back({"waiting for it", in->arrived});
    f.summary = RankWords(in->arrived) + " " + Verb(in->arrived, "waits", "wait") + " in " + f.op + " (" +
                a.groups[in->group].Label() + " seq " + std::to_string(in->seq) + ") for " + RankWords(crashed) +
                ", which crashed: " + what;
  } else {
    f.summary = RankWords(crashed) + " crashed (" + what +
                "); the other ranks of its process groups wait for it in their next collective";
  }
  f.fix_hint = "fix the crash first (read the rank's traceback); the other ranks' timeouts are its consequence";
  return f;
}

void CrashedRankCheck(const RankAnalysis& a, FindingSink* sink) {
  ForEachAbsent(a, AbsentRanks::Cause::kCrashed,
                [&](const Instance& in, AbsentRanks absent) { sink->Add(CrashedRankFinding(a, absent.crashed, &in)); });
}

}  // namespace hangdx::analyze
