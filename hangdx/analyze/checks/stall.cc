#include "hangdx/analyze/checks/stall.h"

#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/stalled_pgs.h"
#include "hangdx/analyze/match.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// One line: why the members may all be in it and it still does not finish.
// `world_inferred`: the world size was neither given nor recorded, so the
// members of an inferred pg are only the ranks seen.
std::string Why(const Group& g, bool gloo, bool world_inferred, const std::map<int, std::vector<Rank>>& by_state) {
  if (gloo && g.inferred) return "gloo records no pg members: a member that never recorded this pg may be missing";
  if (by_state.size() > 1)
    return RankWords(by_state.begin()->second) + " " + Verb(by_state.begin()->second, "has", "have") +
           " not started it while others have";
  if (g.inferred && world_inferred)
    return "no record names the members of " + g.Label() + " or the world size: if the job has more ranks than " +
           RankWords(g.members) +
           ", one that never arrived would hang it (pass --world-size); if not, look at the "
           "transport (NCCL_DEBUG=INFO logs, network, a stuck device)";
  return "no rank is missing or disagrees: look at the transport (NCCL_DEBUG=INFO logs, network, a stuck device)";
}

// The stall finding of `in`, or false when nothing says it has not finished.
bool StallFinding(const RankAnalysis& a, const Instance& in, Finding* out) {
  const Group& g = a.groups[in.group];
  Finding f;
  FillPg(a, in, &f);
  f.op = a.LeadOp(in).op;
  f.kind = Kind::kUndecided;
  bool timed_out = a.options.assume_timed_out;
  // Least advanced state among members: the ranks to look at first.
  std::map<int, std::vector<Rank>> by_state;
  for (size_t k = 0; k < in.arrived.size(); ++k) {
    const model::OpRecord& op = a.OpAt(in, k);
    const model::RankDump* d = a.job.Find(in.arrived[k]);
    if (!op.completed && d && d->wait && d->wait->Stalled()) timed_out = true;  // observed waiting too long
    if (KindUnknown(op)) continue;  // known by its progress alone: its state is not known either
    int st = op.completed ? 3 : op.state == model::OpState::kStarted ? 2 : 1;
    by_state[st].push_back(in.arrived[k]);
    if (op.retired && !op.completed) timed_out = true;
    AddOpEvidence(a, &f, in.arrived[k], op,
                  "in " + std::string(op.op) + " seq " + std::to_string(in.seq) +
                      (op.completed ? ", completed" : ", not completed"));
  }
  // An NCCL log's COLL line is printed at enqueue (ingest/cross_rank/log_completion.h):
  // with no timeout either, "has not finished" is not established.
  if (!timed_out && EnqueuedOnly(a, in)) return false;
  if (by_state.size() > 1) f.culprit_ranks = by_state.begin()->second;
  f.roles.push_back({"arrived", in.arrived});
  if (by_state.size() > 1) f.roles.push_back({"least advanced", by_state.begin()->second});
  f.severity = timed_out ? Severity::kError : Severity::kWarning;
  f.hang = timed_out;
  int64_t unrecorded = g.size - static_cast<int64_t>(g.members.size());
  // One rank's record of a pg whose members nothing names: a collective of
  // one rank cannot wait, so members that left no record exist, how many is
  // unknown (the world size is not given).
  bool lone = unrecorded <= 0 && g.inferred && g.members.size() == 1;
  if (lone) {
    f.summary = "only " + RankWords(in.arrived) + " left a record of " + g.Label() + ": it is in " + f.op + " seq " +
                std::to_string(in.seq) + ", but it has not finished";
    f.details.push_back(
        "a collective of one rank cannot wait, so the pg has members that left no record; which and how many is "
        "unknown (no record names the pg's members or the world size: pass --world-size)");
    f.would_decide = "the logs of the other members: the one not in this collective is the culprit";
  } else if (unrecorded > 0) {
    // The record gives the pg's size but not its members (an NCCL op line's
    // [nranks=N] without the Init line): the members that left no record
    // are counted, not named, since which ranks they are is unknown.
    bool one = in.arrived.size() == 1;
    f.summary = "only " + std::to_string(in.arrived.size()) + " of the " + std::to_string(g.size) + " members of " +
                g.Label() + " left a record (" + RankWords(in.arrived) + "): " + (one ? "it is" : "they are") + " in " +
                f.op + " seq " + std::to_string(in.seq) + (one ? "" : " and agree on it") + ", but it has not finished";
    f.details.push_back((unrecorded == 1 ? std::string("the other member left no record: if it never arrived it "
                                                       "would hang this, and which rank it is is unknown")
                                         : "the other " + std::to_string(unrecorded) +
                                               " members left no record: one that never arrived would hang it, and "
                                               "which ranks they are is unknown") +
                        " (collect every rank's log from its start)");
    f.would_decide = "the logs of the other members: the one not in this collective is the culprit";
  } else {
    f.summary = "all " + std::to_string(in.arrived.size()) + " recorded members of " + g.Label() + " are in " + f.op +
                " seq " + std::to_string(in.seq) + " and agree on it, but it has not finished";
    f.details.push_back(Why(g, a.LeadOp(in).backend == "gloo", a.world.inferred, by_state));
    if (g.inferred && a.world.inferred && by_state.size() <= 1)
      f.would_decide =
          "the world size (--world-size) or the other ranks' logs: a rank not in this collective is the "
          "culprit";
  }
  if (!timed_out) f.details.push_back("no evidence that the wait timed out: it may still be running");
  f.fix_hint = unrecorded > 0 || lone
                   ? "collect every member's log from its start (NCCL_DEBUG=INFO) and rerun"
                   : "check the communication layer of the least advanced ranks (NCCL logs, link errors)";
  *out = std::move(f);
  return true;
}

}  // namespace

void StallCheck(const RankAnalysis& a, FindingSink* sink) {
  std::set<int> explained;
  for (const CreationOrderSplit& split : CreationOrderSplits(a))
    explained.insert(split.instances.begin(), split.instances.end());
  for (const auto& [gi, i] : FirstStalledInstances(a)) {
    Finding f;
    if (!explained.count(i) && StallFinding(a, a.instances.list[i], &f)) sink->Add(std::move(f));
  }
}

}  // namespace hangdx::analyze
