#include "hangdx/analyze/checks/snapshot_root.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// A finding lists the evidence of its first kMaxListed waiters and the
// whereabouts of its first kMaxListed culprits, then a count: a
// 100,000-rank snapshot has tens of thousands of each (its roles list them
// all).
constexpr size_t kMaxListed = 16;

// What groups waiters into one finding: ranks in the same wait (op, AND or
// OR) on ranks of the same culprit classes are one finding, whichever
// culprits of those classes each one waits on. (How long each has waited
// does not split them: one waiter past the stall threshold makes the
// finding a hang, ApplyTimeRule.)
struct Key {
  std::string op;
  bool any_of = false;
  std::vector<int> culprit_classes;  // sorted, unique
  bool operator<(const Key& o) const {
    return std::tie(op, any_of, culprit_classes) < std::tie(o.op, o.any_of, o.culprit_classes);
  }
};

// A culprit's class: idle (waits on nobody) in the op its live state names,
// or without data (crashed when its log says so). Culprits of different
// classes never share a finding.
std::string CulpritClass(const RankAnalysis& a, Rank r, bool idle) {
  if (!idle) return a.Crashed(r) ? "crashed" : "no data";
  const model::RankDump* d = a.job.Find(r);
  return "idle in " + (d && d->wait ? d->wait->current_op : std::string());
}

int ClassId(const std::string& name, std::map<std::string, int>* ids) {
  return ids->try_emplace(name, static_cast<int>(ids->size())).first->second;
}

// Adds one waiter's culprits (idle, then without data) to its finding. The
// waiters of one key have the same kinds of culprit, so the roles exist.
void AddCulprits(const std::vector<Rank>& idle, const std::vector<Rank>& gone, Finding* f) {
  f->culprit_ranks.insert(f->culprit_ranks.end(), idle.begin(), idle.end());
  f->culprit_ranks.insert(f->culprit_ranks.end(), gone.begin(), gone.end());
  for (RoleGroup& g : f->roles) {
    const std::vector<Rank>* add = g.role == "not waiting" ? &idle : g.role == "no data" ? &gone : nullptr;
    if (add) g.ranks.insert(g.ranks.end(), add->begin(), add->end());
  }
}

// The first finding of a key: made from its first waiting rank; its
// culprits and their roles grow with AddCulprits, FinishFinding completes it.
Finding FirstFinding(const RankAnalysis& a, Rank rank, const std::vector<Rank>& idle, const std::vector<Rank>& gone) {
  const auto& w = *a.job.Find(rank)->wait;
  Finding f;
  f.op = w.current_op;
  f.seq = w.op_seq;
  f.roles.push_back({"waiting", {rank}});
  if (!idle.empty()) f.roles.push_back({"not waiting", {}});
  if (!gone.empty()) f.roles.push_back({"no data", {}});
  AddCulprits(idle, gone, &f);
  f.evidence.push_back({a.job.Find(rank)->file, rank, -1, "waits in " + w.current_op});
  f.fix_hint = idle.empty() ? "get the state or log of the silent rank: it most likely died"
                            : "find what the awaited rank is doing instead (py-spy dump it)";
  return f;
}

void SortUnique(std::vector<Rank>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// Completes a finding once all its waiters are in: culprits and roles
// sorted and unique, its kind, the whereabouts of its culprits (the first
// kMaxListed, in rank order), and a count of the waiters whose evidence was
// not listed (`unlisted`).
void FinishFinding(const RankAnalysis& a, size_t unlisted, Finding* f) {
  SortUnique(&f->culprit_ranks);
  bool idle = false, any_crashed = false;
  for (RoleGroup& g : f->roles) {
    SortUnique(&g.ranks);
    if (g.role == "not waiting") idle = true;
    if (g.role == "no data")
      for (Rank r : g.ranks) any_crashed = any_crashed || a.Crashed(r);
  }
  f->kind = idle || (!a.dump_based && !any_crashed) ? Kind::kMissingRank : Kind::kCrashedRank;
  for (size_t i = 0; i < f->culprit_ranks.size() && i < kMaxListed; ++i)
    f->details.push_back(WhereInstead(a, f->culprit_ranks[i]));
  if (f->culprit_ranks.size() > kMaxListed)
    f->details.push_back(
        "... and " +
        Count(static_cast<int64_t>(f->culprit_ranks.size() - kMaxListed), "more culprit", "more culprits") +
        " (the roles list them; each one's state is in the report's rank classes)");
  if (unlisted > 0)
    f->evidence.push_back({"", -1, -1,
                           "... and " + Count(static_cast<int64_t>(unlisted), "more rank waits", "more ranks wait") +
                               " in " + f->op + " (the role 'waiting' lists them)"});
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
  std::vector<Rank> listed;  // per finding: waiters with evidence (the first kMaxListed)
  std::vector<size_t> more;  // per finding: waiters without
  std::map<Key, size_t> by_key;
  std::map<std::string, int> class_ids;  // culprit class -> id
  for (const auto& [rank, node] : a.graph.snapshots()) {
    if (a.graph.dead(node)) continue;
    // Only ranks that wait directly on a rank that waits on nothing.
    std::vector<Rank> idle, gone;
    for (int s : a.graph.successors(node)) {
      if (a.graph.node(s).type == RankNodeType::kIdle) idle.push_back(a.graph.node(s).rank);
      if (a.graph.node(s).type == RankNodeType::kNoDump) gone.push_back(a.graph.node(s).rank);
    }
    if (idle.empty() && gone.empty()) continue;
    const model::WaitSnapshot& w = *a.job.Find(rank)->wait;
    Key key{w.current_op, w.any_of, {}};
    for (Rank r : idle) key.culprit_classes.push_back(ClassId(CulpritClass(a, r, true), &class_ids));
    for (Rank r : gone) key.culprit_classes.push_back(ClassId(CulpritClass(a, r, false), &class_ids));
    std::sort(key.culprit_classes.begin(), key.culprit_classes.end());
    key.culprit_classes.erase(std::unique(key.culprit_classes.begin(), key.culprit_classes.end()),
                              key.culprit_classes.end());
    auto [it, fresh] = by_key.try_emplace(std::move(key), found.size());
    if (fresh) {
      found.push_back(FirstFinding(a, rank, idle, gone));
      more.push_back(0);
      continue;
    }
    Finding& f = found[it->second];
    f.roles.front().ranks.push_back(rank);
    AddCulprits(idle, gone, &f);
    if (f.evidence.size() < kMaxListed)
      f.evidence.push_back({a.job.Find(rank)->file, rank, -1, "waits in " + w.current_op});
    else
      ++more[it->second];
  }
  for (size_t i = 0; i < found.size(); ++i) {
    Finding& f = found[i];
    FinishFinding(a, more[i], &f);
    OrderCulprits(a, &f);
    WriteSummary(&f);
    ApplyTimeRule(a, &f);
    sink->Add(std::move(f));
  }
}

}  // namespace hangdx::analyze
