#include "hangdx/analyze/checks/unreadable.h"

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

Finding UnreadableFinding(const RankAnalysis& a, const Instance& in, const std::vector<model::Rank>& unreadable) {
  Finding f;
  FillPg(a, in, &f);
  f.kind = Kind::kUndecided;
  f.severity = Severity::kError;
  f.hang = true;
  f.op = a.LeadOp(in).op;
  f.culprit_ranks = unreadable;
  f.roles.push_back({"arrived", in.arrived});
  f.roles.push_back({"dump unreadable", unreadable});
  std::string files;
  for (model::Rank r : unreadable) {
    const std::string& file = a.job.unreadable.at(r);
    files += (files.empty() ? "" : ", ") + file;
    f.evidence.push_back({file, r, -1, "could not be read (see input problems)"});
  }
  f.summary = RankWords(in.arrived) + " " + Verb(in.arrived, "waits", "wait") + " in " + f.op + " (" +
              a.groups[in.group].Label() + " seq " + std::to_string(in.seq) + ") for " + RankWords(unreadable) +
              ", whose dump could not be read (" + files + "): cannot tell what it was doing";
  f.fix_hint = "re-collect the unreadable dump (a truncated file usually means the dump was cut short)";
  return f;
}

}  // namespace

void UnreadableCheck(const RankAnalysis& a, FindingSink* sink) {
  ForEachAbsent(a, AbsentRanks::Cause::kUnreadable, [&](const Instance& in, AbsentRanks absent) {
    sink->Add(UnreadableFinding(a, in, absent.unreadable));
  });
}

}  // namespace hangdx::analyze
