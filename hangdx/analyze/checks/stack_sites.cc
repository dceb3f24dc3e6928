#include "hangdx/analyze/checks/stack_sites.h"

#include <algorithm>
#include <map>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
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

}  // namespace

void StackSitesCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<Rank, Where> where;
  for (const auto& d : a.job.dumps)
    if (!d.stacks.empty() && d.ops.empty()) where[d.rank] = WhereOf(d);  // dumps with entries speak for themselves
  if (where.size() < 2) return;
  std::map<std::string, std::vector<Rank>> by_site;
  std::vector<Rank> elsewhere;
  for (const auto& [r, w] : where) (w.op.empty() ? elsewhere : by_site[w.op + " in " + w.site]).push_back(r);
  if (by_site.empty()) return;
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
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  for (const auto& [r, w] : where) {
    if (!w.stack) continue;
    std::string top;
    for (size_t i = 0; i < w.stack->frames.size() && i < 3; ++i) top += (i ? " <- " : "") + w.stack->frames[i].name;
    f.evidence.push_back({w.stack->file, r, -1, "stack (line " + std::to_string(w.stack->line) + "): " + top});
  }
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
