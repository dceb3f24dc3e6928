#include "hangdx/analyze/passes/named_culprit_agreement.h"

#include <algorithm>
#include <cstring>

#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

bool FromProducer(const FindingEntry& e) { return std::strcmp(e.check, "named_culprit") == 0; }

// A finding from the records that names culprits: what a producer's report
// can agree or disagree with.
bool FromRecords(const FindingEntry& e) {
  return e.scope == Scope::kWaitState && !FromProducer(e) && e.finding.severity == Severity::kError &&
         !e.finding.culprit_ranks.empty();
}

// A finding from the records that names no one: it shows that something does
// not finish (a stalled pg, all its seen members in it) but not who holds it up.
bool NamesNoOne(const FindingEntry& e) {
  return e.scope == Scope::kWaitState && !FromProducer(e) && e.finding.kind == Kind::kUndecided &&
         e.finding.culprit_ranks.empty() && e.finding.candidates.empty();
}

// The producer's finding `said` says more than the records' `seen`, which
// names no one: `seen` becomes part of it.
void Absorb(const Finding& seen, Finding* said) {
  said->details.push_back((seen.culprit_ranks.empty() ? "the records agree that it does not finish: "
                                                      : "the records agree, without telling those ranks apart: ") +
                          seen.summary);
  said->evidence.insert(said->evidence.end(), seen.evidence.begin(), seen.evidence.end());
}

// True when the records' culprits are ranks the files hold nothing of and
// the producer names some of them: it narrows down what the records cannot
// tell apart (a desync report naming rank 7 where the logs only lack 1-7).
bool Narrows(const RankAnalysis& a, const Finding& said, const Finding& seen) {
  if (said.culprit_ranks.size() >= seen.culprit_ranks.size() || said.ranks_are_pg_local != seen.ranks_are_pg_local)
    return false;
  for (Rank r : seen.culprit_ranks)
    if (a.job.Find(r)) return false;
  return std::includes(seen.culprit_ranks.begin(), seen.culprit_ranks.end(), said.culprit_ranks.begin(),
                       said.culprit_ranks.end());
}

}  // namespace

void NamedCulpritAgreementPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  auto& entries = sink->entries();
  std::vector<bool> drop(entries.size(), false);
  for (size_t p = 0; p < entries.size(); ++p) {
    if (!FromProducer(entries[p]) || entries[p].finding.culprit_ranks.empty()) continue;
    Finding& said = entries[p].finding;
    if (said.hang)
      for (size_t r = 0; r < entries.size(); ++r)
        if (!drop[r] && (NamesNoOne(entries[r]) || (FromRecords(entries[r]) && Narrows(a, said, entries[r].finding)))) {
          Absorb(entries[r].finding, &said);
          drop[r] = true;
        }
    for (size_t r = 0; r < entries.size(); ++r) {
      if (drop[r] || !FromRecords(entries[r])) continue;
      Finding& seen = entries[r].finding;
      if (seen.culprit_ranks == said.culprit_ranks && seen.ranks_are_pg_local == said.ranks_are_pg_local) {
        seen.details.push_back("the producer's own report names the same " +
                               std::string(said.culprit_ranks.size() == 1 ? "rank" : "ranks") + " (" + said.summary +
                               ")");
        seen.evidence.insert(seen.evidence.begin(), said.evidence.begin(), said.evidence.end());
        drop[p] = true;
        break;
      }
      seen.details.push_back("but the producer's own report names " + RankWords(said.culprit_ranks) +
                             " instead: " + said.summary);
      said.details.push_back("but the other evidence names " + RankWords(seen.culprit_ranks) + ": " + seen.summary);
    }
  }
  std::vector<FindingEntry> kept;
  for (size_t i = 0; i < entries.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(entries[i]));
  entries = std::move(kept);
}

}  // namespace hangdx::analyze
