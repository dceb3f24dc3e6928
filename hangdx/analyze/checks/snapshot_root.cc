#include "hangdx/analyze/checks/snapshot_root.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// The first finding for (culprits, op): made from its first waiting rank.
Finding FirstFinding(const RankAnalysis& a, Rank rank, const std::vector<Rank>& idle, const std::vector<Rank>& gone,
                     const std::vector<Rank>& culprits) {
  const auto& w = *a.job.Find(rank)->wait;
  Finding f;
  bool any_crashed = false;
  for (Rank r : gone) any_crashed = any_crashed || a.Crashed(r);
  f.kind = !idle.empty() || (!a.dump_based && !any_crashed) ? Kind::kMissingRank : Kind::kCrashedRank;
  f.culprit_ranks = culprits;
  f.op = w.current_op;
  f.seq = w.op_seq;
  f.roles.push_back({"waiting", {rank}});
  if (!idle.empty()) f.roles.push_back({"not waiting", idle});
  if (!gone.empty()) f.roles.push_back({"no data", gone});
  f.evidence.push_back({a.job.Find(rank)->file, rank, -1, "waits in " + w.current_op});
  for (Rank r : culprits) f.details.push_back(WhereInstead(a, r));
  f.fix_hint = idle.empty() ? "get the state or log of the silent rank: it most likely died"
                            : "find what the awaited rank is doing instead (py-spy dump it)";
  return f;
}

// True when every culprit is in the finding's "no data" role: the snapshot
// holds nothing about them, so nothing says where they are.
bool CulpritsWithoutData(const Finding& f) {
  for (const RoleGroup& g : f.roles) {
    if (g.role != "no data") continue;
    return std::all_of(f.culprit_ranks.begin(), f.culprit_ranks.end(),
                       [&](Rank r) { return std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end(); });
  }
  return false;
}

void WriteSummary(Finding* f) {
  std::sort(f->roles.front().ranks.begin(), f->roles.front().ranks.end());
  const char* tail = f->kind == Kind::kCrashedRank ? ", of which there is no state at all"
                     : CulpritsWithoutData(*f)
                         ? Verb(f->culprit_ranks, ", which is not in the snapshot (no data)",
                                ", which are not in the snapshot (no data)")
                         : Verb(f->culprit_ranks, ", which is not waiting on anyone (it is elsewhere)",
                                ", which are not waiting on anyone (they are elsewhere)");
  f->summary = RankWords(f->roles.front().ranks) + " " + Verb(f->roles.front().ranks, "waits", "wait") + " in " +
               f->op + " for " + RankWords(f->culprit_ranks) + tail;
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000);
  return buf;
}

// A wait on a rank that is busy elsewhere is a hang only with time: one
// snapshot cannot tell a stuck rank from a slow one. The waiters' waited_ms
// against their stall threshold (or --assume-timed-out) decides; without
// them the finding is "waiting, not deadlocked" (info, exit 0). A culprit
// with no state at all is left alone: its silence is the evidence.
void ApplyTimeRule(const RankAnalysis& a, Finding* f) {
  if (f->kind != Kind::kMissingRank || f->roles.size() < 2 || f->roles[1].role != "not waiting" ||
      (f->roles.size() > 2 && f->roles[2].role == "no data"))
    return;
  int64_t waited = -1, threshold = -1;
  bool stalled = a.options.assume_timed_out;
  for (Rank r : f->roles.front().ranks) {
    const model::WaitSnapshot& w = *a.job.Find(r)->wait;
    stalled = stalled || w.Stalled();
    if (w.waited_ms > waited) {
      waited = w.waited_ms;
      threshold = w.stall_after_ms > 0 ? w.stall_after_ms : model::WaitSnapshot::kDefaultStallAfterMs;
    }
  }
  std::string waits = waited < 0 ? "" : "waited " + Seconds(waited) + " (stall threshold " + Seconds(threshold) + ")";
  if (stalled) {
    if (!waits.empty()) f->details.push_back("the longest wait: " + waits);
    return;
  }
  f->kind = Kind::kStraggler;
  f->severity = Severity::kInfo;
  f->hang = false;
  f->summary = "waiting, not deadlocked: " + f->summary + "; " +
               (waited < 0 ? "one snapshot does not show it stuck (no waited_ms)" : waits + ": it may only be slow");
  f->fix_hint =
      "a wait is a hang once it lasts: watch the job (hangdx watch), or give each state waited_ms; "
      "a wait past the stall threshold names the rank the chain ends at";
}

// Culprits, least progressed first (the lowest op_seq of their live
// state), then by rank.
void OrderCulprits(const RankAnalysis& a, Finding* f) {
  auto seq = [&](Rank r) {
    const model::RankDump* d = a.job.Find(r);
    return d && d->wait && d->wait->op_seq >= 0 ? d->wait->op_seq : INT64_MAX;
  };
  std::stable_sort(f->culprit_ranks.begin(), f->culprit_ranks.end(), [&](Rank x, Rank y) { return seq(x) < seq(y); });
}

}  // namespace

void SnapshotRootCheck(const RankAnalysis& a, FindingSink* sink) {
  std::vector<Finding> found;
  std::map<std::pair<std::vector<Rank>, std::string>, size_t> by_key;  // (culprits, op) -> found
  for (const auto& [rank, node] : a.graph.snapshots()) {
    if (a.graph.dead(node)) continue;
    // Only ranks that wait directly on a rank that waits on nothing.
    std::vector<Rank> idle, gone;
    for (int s : a.graph.successors(node)) {
      if (a.graph.node(s).type == RankNodeType::kIdle) idle.push_back(a.graph.node(s).rank);
      if (a.graph.node(s).type == RankNodeType::kNoDump) gone.push_back(a.graph.node(s).rank);
    }
    if (idle.empty() && gone.empty()) continue;
    std::vector<Rank> culprits = idle;
    culprits.insert(culprits.end(), gone.begin(), gone.end());
    std::sort(culprits.begin(), culprits.end());
    const std::string& op = a.job.Find(rank)->wait->current_op;
    auto [it, fresh] = by_key.try_emplace({culprits, op}, found.size());
    if (fresh) {
      found.push_back(FirstFinding(a, rank, idle, gone, culprits));
      continue;
    }
    Finding& f = found[it->second];
    f.roles.front().ranks.push_back(rank);
    f.evidence.push_back({a.job.Find(rank)->file, rank, -1, "waits in " + op});
  }
  for (Finding& f : found) {
    OrderCulprits(a, &f);
    WriteSummary(&f);
    ApplyTimeRule(a, &f);
    sink->Add(std::move(f));
  }
}

}  // namespace hangdx::analyze
