#include "hangdx/analyze/passes/named_culprit_agreement.h"

#include <cstring>

#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

bool FromProducer(const FindingEntry& e) { return std::strcmp(e.check, "named_culprit") == 0; }

// A finding from the records that names culprits: what a producer's report
// can agree or disagree with.
bool FromRecords(const FindingEntry& e) {
  return e.scope == Scope::kWaitState && !FromProducer(e) && e.finding.severity == Severity::kError &&
         !e.finding.culprit_ranks.empty();
}

}  // namespace

void NamedCulpritAgreementPass(const RankAnalysis&, FindingSink* sink, Diagnosis*) {
  auto& entries = sink->entries();
  std::vector<bool> drop(entries.size(), false);
  for (size_t p = 0; p < entries.size(); ++p) {
    if (!FromProducer(entries[p]) || entries[p].finding.culprit_ranks.empty()) continue;
    Finding& said = entries[p].finding;
    for (size_t r = 0; r < entries.size(); ++r) {
      if (!FromRecords(entries[r])) continue;
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
