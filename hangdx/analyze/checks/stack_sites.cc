#include "hangdx/analyze/checks/stack_sites.h"

#include <algorithm>
#include <map>
#include <set>

#include "hangdx/analyze/checks/crashed_rank.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/known_bug.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// torch.distributed's collective and P2P entry points, as stack frames name them.
bool IsCollectiveFrame(const std::string& name) {
  static const std::set<std::string> kOps = {"all_reduce",
                                             "broadcast",
                                             "all_gather",
                                             "all_gather_into_tensor",
                                             "_all_gather_base",
                                             "reduce_scatter",
                                             "reduce_scatter_tensor",
                                             "_reduce_scatter_base",
                                             "reduce",
                                             "gather",
                                             "scatter",
                                             "all_to_all",
                                             "all_to_all_single",
                                             "barrier",
                                             "monitored_barrier",
                                             "send",
                                             "recv",
                                             "isend",
                                             "irecv",
                                             "batch_isend_irecv",
                                             "broadcast_object_list",
                                             "all_gather_object",
                                             "gather_object",
                                             "scatter_object_list",
                                             "all_reduce_coalesced",
                                             "all_gather_coalesced"};
  return kOps.count(name) > 0;
}

// Where one rank's stacks say it is.
struct Where {
  std::string op, site;  // op "" when in no collective
  const model::StackSample* stack = nullptr;
};

Where WhereOf(const model::RankDump& d) {
  Where w;
  for (const auto& st : d.stacks) {
    // The outermost collective frame: broadcast_object_list rather than
    // the broadcast it calls.
    int hit = -1;
    for (int i = 0; i < static_cast<int>(st.frames.size()); ++i)
      if (IsCollectiveFrame(st.frames[i].name)) hit = i;
    if (hit < 0) continue;
    w.op = st.frames[hit].name;
    // The call site: the first caller outside torch.distributed (its
    // decorators, such as c10d_logger's wrapper, say nothing).
    int site = hit + 1;
    while (site < static_cast<int>(st.frames.size()) &&
           st.frames[site].filename.find("torch/distributed") != std::string::npos)
      ++site;
    if (site < static_cast<int>(st.frames.size())) {
      w.site = st.frames[site].name;
      if (!st.frames[site].filename.empty())
        w.site += " at " + st.frames[site].filename + ":" + std::to_string(st.frames[site].line);
    }
    w.stack = &st;
    break;
  }
  if (!w.stack && !d.stacks.empty()) w.stack = &d.stacks.front();
  return w;
}

using Sides = std::vector<std::pair<std::string, std::vector<Rank>>>;

// Kind, culprits, summary and fix hint; false when all ranks are in one call
// site (not decidable from stacks).
bool Decide(const Sides& sides, const std::vector<Rank>& elsewhere, Finding* f) {
  if (sides.size() >= 2) {
    f->kind = Kind::kCollectiveMismatch;
    for (size_t k = 1; k < sides.size(); ++k)
      f->culprit_ranks.insert(f->culprit_ranks.end(), sides[k].second.begin(), sides[k].second.end());
    f->summary =
        "the ranks' stacks are in different collectives: " + RankWords(sides[0].second) + " in " + sides[0].first;
    for (size_t k = 1; k < sides.size(); ++k) f->summary += "; " + RankWords(sides[k].second) + " in " + sides[k].first;
    f->fix_hint =
        "make every rank reach the same collectives in the same order (look for an early return or a "
        "rank-dependent branch around the minority's call site)";
    return true;
  }
  if (elsewhere.empty()) return false;
  f->kind = Kind::kMissingRank;
  f->culprit_ranks = elsewhere;
  f->summary = RankWords(sides[0].second) + " " + Verb(sides[0].second, "is", "are") + " blocked in " + sides[0].first +
               " while " + RankWords(elsewhere) + " " + Verb(elsewhere, "is", "are") + " in no collective";
  f->fix_hint = "find what the absent ranks are doing instead (their stacks below)";
  return true;
}

// Each rank's stack, its three innermost frames.
void AddStackEvidence(const std::map<Rank, Where>& where, Finding* f) {
  for (const auto& [r, w] : where) {
    if (!w.stack) continue;
    std::string top;
    for (size_t i = 0; i < w.stack->frames.size() && i < 3; ++i) top += (i ? " <- " : "") + w.stack->frames[i].name;
    f->evidence.push_back({w.stack->file, r, -1, "stack (line " + std::to_string(w.stack->line) + "): " + top});
  }
}

// The innermost frame of `st` with a name (gdb prints "??" for frames it
// has no symbol for), "" when none.
std::string InnermostNamed(const model::StackSample& st) {
  for (const auto& f : st.frames)
    if (!f.name.empty() && f.name != "??" && f.name.rfind("___lldb_unnamed_symbol", 0) != 0) return f.name;
  return "";
}

// Every rank with a stack in the same call outside any collective, its
// thread not idle: no rank waits for another, the call itself does not
// return on any of them (a driver, kernel or library hang: every rank in
// cuModuleLoadData, or in a spinning kernel's launch). A py-spy thread
// marked idle is waiting (sleep, poll, a queue): for what, the stacks do not
// say. False when the ranks are not all in one such call, or when their
// stacks match a known library bug (checks/known_bug.h says more).
bool CommonCall(const RankAnalysis& a, const std::map<Rank, Where>& where, Finding* f) {
  std::string call;
  std::vector<Rank> ranks;
  for (const auto& [r, w] : where) {
    if (!w.stack || w.stack->thread.find("(idle)") != std::string::npos) return false;
    std::string here = InnermostNamed(*w.stack);
    if (here.empty() || (!call.empty() && here != call)) return false;
    call = here;
    ranks.push_back(r);
  }
  if (StacksMatchAKnownBug(a.job)) return false;
  f->kind = Kind::kResourceDeadlock;
  f->op = call;
  f->roles.push_back({"in " + call, ranks});
  f->summary = RankWords(ranks) + ", every rank with a stack, " + Verb(ranks, "is", "are") + " in " + call +
               ", outside any collective: no rank waits for another; that call does not return on any of them";
  f->details.push_back(
      "if these stacks were taken while the job hung, the hang is inside " + call +
      " on every rank (a GPU kernel that does not finish, a driver or library call): not a rank's code path");
  f->fix_hint = "find what " + call +
                " waits for on every rank: the GPU (nvidia-smi shows 100% utilisation for a spinning kernel), the "
                "driver (dmesg), a lock; stacks with --native show the frames below it";
  return true;
}

}  // namespace

void StackSitesCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<Rank, Where> where;
  for (const auto& d : a.job.dumps)
    if (!d.stacks.empty() && d.ops.empty()) where[d.rank] = WhereOf(d);  // dumps with entries speak for themselves
  if (where.size() < 2) return;
  std::map<std::string, std::vector<Rank>> by_site;
  std::vector<Rank> elsewhere;
  for (const auto& [r, w] : where) (w.op.empty() ? elsewhere : by_site[w.op + " in " + w.site]).push_back(r);
  if (by_site.empty()) {
    // Stacks of ranks that all crashed (faulthandler's "Fatal Python error:
    // Segmentation fault" prints the stack the fault hit): they died in that
    // call, they do not wait in it; the crash is reported as such
    // (passes/unnamed_crash.h).
    if (std::all_of(where.begin(), where.end(), [&](const auto& w) { return Crashed(a.job, w.first); })) return;
    Finding f;
    f.severity = Severity::kError;
    f.hang = true;
    if (CommonCall(a, where, &f)) {
      AddStackEvidence(where, &f);
      sink->Add(std::move(f));
    }
    return;
  }
  Sides sides(by_site.begin(), by_site.end());
  std::stable_sort(sides.begin(), sides.end(), [](const auto& x, const auto& y) {
    if (x.second.size() != y.second.size()) return x.second.size() > y.second.size();
    return x.second.front() > y.second.front();  // tie: the side without the lowest rank is the reference
  });
  Finding f;
  f.severity = Severity::kError;
  f.hang = true;
  f.op = where[sides.front().second.front()].op;
  for (const auto& [site, ranks] : sides) f.roles.push_back({site, ranks});
  if (!elsewhere.empty()) f.roles.push_back({"not in a collective", elsewhere});
  if (!Decide(sides, elsewhere, &f)) return;
  // The ranks in no collective whose logs say they crashed (a traceback
  // ending in an OOM, a CUDA error): they are not "doing something else",
  // they are gone, and the crash is the cause (the fresh-user tester's
  // torchrun log of one OOM and two gloo "Connection closed by peer").
  if (f.kind == Kind::kMissingRank &&
      std::all_of(elsewhere.begin(), elsewhere.end(), [&](Rank r) { return Crashed(a.job, r); })) {
    Finding crash = CrashedRankFinding(a, elsewhere, nullptr);
    crash.roles.push_back({"blocked in " + sides[0].first, sides[0].second});
    AddStackEvidence(where, &crash);
    sink->Add(std::move(crash));
    return;
  }
  // Equal sides while ranks of the job left no stack (the issue's "two logs
  // of a 4-rank communicator"): those ranks decide, so name both sides.
  const std::vector<Rank>& unseen = a.world.without_dump;
  if (f.kind == Kind::kCollectiveMismatch && sides[0].second.size() == sides[1].second.size() && !unseen.empty()) {
    f.kind = Kind::kUndecided;
    f.culprit_ranks.clear();
    for (const auto& [site, ranks] : sides)
      if (ranks.size() == sides[0].second.size())
        f.culprit_ranks.insert(f.culprit_ranks.end(), ranks.begin(), ranks.end());
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    f.candidates = f.culprit_ranks;
    f.summary += "; the sides are equal and " + RankWords(unseen) + " left no stack: cannot tell which side deviated";
    f.would_decide = "the stacks of " + RankWords(unseen) + ": the call site the other ranks are in is the reference";
  }
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  AddStackEvidence(where, &f);
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
