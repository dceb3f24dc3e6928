#include "hangdx/analyze/passes/causes.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

bool IsMismatch(const Finding& f) {
  return f.kind == Kind::kCollectiveMismatch || f.kind == Kind::kSizeMismatch ||
         (f.kind == Kind::kUndecided && !f.candidates.empty());
}

// Every rank a finding's roles name.
std::set<Rank> RanksIn(const Finding& f) {
  std::set<Rank> out(f.culprit_ranks.begin(), f.culprit_ranks.end());
  for (const auto& role : f.roles) out.insert(role.ranks.begin(), role.ranks.end());
  return out;
}

// True when every culprit of crash `c` is named by mismatch `m`.
bool DiedOf(const Finding& c, const Finding& m) {
  std::set<Rank> in = RanksIn(m);
  return !c.culprit_ranks.empty() &&
         std::all_of(c.culprit_ranks.begin(), c.culprit_ranks.end(), [&](Rank r) { return in.count(r) > 0; });
}

// True when the crashed ranks of `c` may be members of the pg stalled in
// `s`: members the records list, or any rank when they are inferred.
bool MayBeMember(const RankAnalysis& a, const Finding& c, const Finding& s) {
  for (const Group& g : a.groups.all()) {
    if (g.name != s.pg_name || g.desc != s.pg_desc) continue;
    if (g.inferred) return true;
    for (Rank r : c.culprit_ranks)
      if (g.MemberIndex(r) >= 0) return true;
  }
  return false;
}

bool IsStall(const FindingEntry& e) { return std::strcmp(e.check, "stall") == 0 && e.finding.kind == Kind::kUndecided; }

void AttachDeath(const Finding& crash, Finding* mismatch) {
  mismatch->roles.push_back({"crashed", crash.culprit_ranks});
  mismatch->details.push_back(RankWords(crash.culprit_ranks) + " crashed in it: " + crash.summary);
  mismatch->evidence.insert(mismatch->evidence.end(), crash.evidence.begin(), crash.evidence.end());
}

void AttachStall(const Finding& stall, Finding* crash) {
  std::vector<Rank> waiting;
  for (const auto& role : stall.roles)
    if (role.role == "arrived") waiting = role.ranks;
  if (!waiting.empty()) {
    crash->roles.push_back({"waiting in " + stall.op, waiting});
    crash->hang = true;  // ranks wait for it (CrashedRankFinding may have seen none)
  }
  crash->details.push_back("its consequence: " + stall.summary);
  crash->evidence.insert(crash->evidence.end(), stall.evidence.begin(), stall.evidence.end());
}

}  // namespace

void CausesPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  auto& entries = sink->entries();
  std::vector<bool> drop(entries.size(), false);
  for (size_t c = 0; c < entries.size(); ++c) {
    if (entries[c].scope != Scope::kWaitState || entries[c].finding.kind != Kind::kCrashedRank) continue;
    for (size_t m = 0; m < entries.size(); ++m)
      if (m != c && !drop[m] && entries[m].scope == Scope::kWaitState && IsMismatch(entries[m].finding) &&
          DiedOf(entries[c].finding, entries[m].finding)) {
        AttachDeath(entries[c].finding, &entries[m].finding);
        drop[c] = true;
        break;
      }
    if (drop[c]) continue;
    for (size_t s = 0; s < entries.size(); ++s)
      if (!drop[s] && IsStall(entries[s]) && MayBeMember(a, entries[c].finding, entries[s].finding)) {
        AttachStall(entries[s].finding, &entries[c].finding);
        drop[s] = true;
      }
  }
  std::vector<FindingEntry> kept;
  for (size_t i = 0; i < entries.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(entries[i]));
  entries = std::move(kept);
}

}  // namespace hangdx::analyze
