#include "hangdx/analyze/checks/lost_peer.h"

#include <algorithm>
#include <set>

#include "hangdx/analyze/checks/absent_ranks.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::LogEvent;
using model::Rank;

bool ReportsLostPeer(const model::Job& job, const std::vector<Rank>& ranks) {
  for (Rank r : ranks)
    if (const model::RankDump* d = job.Find(r))
      for (const auto& e : d->events)
        if (e.kind == LogEvent::Kind::kPeerLost) return true;
  return false;
}

namespace {

// True when a root (pg, seq) with absent members is reported by the
// instance checks.
bool AnInstanceExplainsIt(const RankAnalysis& a) {
  for (int i = 0; i < static_cast<int>(a.instances.list.size()); ++i)
    if (a.IsRoot(i) && ClassifyAbsent(a, a.instances.list[i]).cause != AbsentRanks::Cause::kNone) return true;
  return false;
}

}  // namespace

void LostPeerCheck(const RankAnalysis& a, FindingSink* sink) {
  std::vector<Rank> losers;
  std::set<Rank> peers;
  std::vector<Evidence> lines;
  for (const auto& d : a.job.dumps) {
    if (a.Crashed(d.rank)) return;  // the crash itself is in the logs: its own finding
    bool lost = false;
    for (const auto& e : d.events) {
      if (e.kind != LogEvent::Kind::kPeerLost) continue;
      lost = true;
      if (e.peer >= 0 && e.peer != d.rank) peers.insert(e.peer);
      if (lines.size() < kEvidencePerSide)
        lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
    if (lost && d.rank >= 0) losers.push_back(d.rank);
  }
  if (losers.empty() || AnInstanceExplainsIt(a)) return;
  for (Rank r : losers) peers.erase(r);
  std::vector<Rank> culprits(peers.begin(), peers.end());
  bool named = !culprits.empty();
  if (!named) culprits = a.world.without_dump;
  if (culprits.empty()) return;
  Finding f;
  f.kind = Kind::kCrashedRank;
  f.severity = Severity::kError;
  f.hang = true;
  f.culprit_ranks = culprits;
  f.roles.push_back({"lost the connection", losers});
  f.roles.push_back({named ? "the peer they lost" : "no log", culprits});
  f.summary = RankWords(losers) + " lost " + Verb(losers, "its", "their") + " connection to a peer while " +
              RankWords(culprits) + (named ? " went away" : " left no log at all") + ": " +
              Verb(culprits, "it", "they") + " most likely died (crash, kill, exit)";
  f.details.push_back(
      "a connection closed or reset by the peer means the peer's process ended; the ranks that "
      "report it are its victims");
  f.evidence = std::move(lines);
  f.fix_hint =
      "find why the peer's process ended (its stderr, the launcher's exit codes, dmesg for the OOM killer); "
      "the other ranks' errors are its consequence";
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
