#include "hangdx/analyze/checks/stack_sites.h"

#include <algorithm>
#include <map>
#include <set>

#include "hangdx/analyze/checks/crashed_rank.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/known_bug.h"
#include "hangdx/analyze/checks/lost_peer.h"
#include "hangdx/analyze/stack_threads.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// Where one rank's stacks say it is: its speaking thread
// (analyze/stack_threads.h), the collective that thread is in and its call
// site.
struct Where {
  CollectiveCall call;   // the collective or P2P call, found() false when none
  std::string op, site;  // op "" when in no collective
  std::string words;     // the op as a finding says it: "all_reduce", "DDP backward (gradient all_reduce)"
  const model::StackSample* stack = nullptr;
};

// The call site: the first caller outside torch.distributed (its
// decorators, such as c10d_logger's wrapper, say nothing), and for DDP
// backward outside torch (autograd, Tensor.backward).
std::string CallSite(const model::StackSample& st, const CollectiveCall& c) {
  // A native frame (gdb) names the collective in c10d's worker thread,
  // whose callers are the thread's loop, not user code: the frame itself,
  // without its argument list, and its library, is the site.
  if (const model::Frame& n = st.frames[static_cast<size_t>(c.frame)]; n.name.rfind("c10d::", 0) == 0) {
    std::string lib = n.filename.substr(n.filename.find_last_of('/') + 1);
    return n.name.substr(0, n.name.find('(')) + (lib.empty() ? "" : " (" + lib + ")");
  }
  const std::string skip = c.ddp_backward ? "torch/" : "torch/distributed";
  size_t site = static_cast<size_t>(c.frame) + 1;
  while (site < st.frames.size() && st.frames[site].filename.find(skip) != std::string::npos) ++site;
  if (site >= st.frames.size()) return "";
  const model::Frame& f = st.frames[site];
  return f.filename.empty() ? f.name : f.name + " at " + f.filename + ":" + std::to_string(f.line);
}

Where WhereOf(const model::RankDump& d) {
  Where w;
  w.stack = SpeakingThread(d);
  if (!w.stack) return w;
  CollectiveCall c = CollectiveIn(*w.stack);
  if (!c.found()) return w;
  w.call = c;
  w.op = c.op;
  w.words = c.Words();
  w.site = CallSite(*w.stack, c);
  return w;
}

using Sides = std::vector<std::pair<std::string, std::vector<Rank>>>;

// Kind, culprits, summary and fix hint; false when all ranks are in one call
// site (not decidable from stacks).
bool Decide(const Sides& sides, const std::vector<Rank>& elsewhere, Finding* f) {
  if (sides.size() >= 2 && !elsewhere.empty()) {
    // Ranks in no collective hold up every collective they belong to, and
    // stacks carry no pg: ranks at different sites may wait in different
    // pgs (sub-groups) for them (testdata/torch/sub_sleep: rank 0 in its
    // pair's all_reduce, ranks 2-3 in the world's, rank 1 asleep). Was a
    // collective_mismatch naming rank 0.
    f->kind = Kind::kMissingRank;
    f->culprit_ranks = elsewhere;
    std::string sites;
    for (const auto& [site, ranks] : sides) sites += (sites.empty() ? "" : "; ") + RankWords(ranks) + " in " + site;
    f->summary = RankWords(elsewhere) + " " + Verb(elsewhere, "is", "are") + " in no collective while the others are "
                 "blocked in collectives at " + std::to_string(sides.size()) + " call sites (" + sites + ")";
    f->details.push_back(
        "stacks carry no pg: ranks at different call sites may wait in different pgs (sub-groups) for the ranks in "
        "no collective, or some of them may have called another collective; the Flight Recorder dumps tell which");
    f->fix_hint = "find what the absent ranks are doing instead (their stacks below)";
    return true;
  }
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

// True for a frame of Python code (its file ends in ".py").
bool IsPythonFrame(const model::Frame& f) {
  return f.filename.size() > 3 && f.filename.compare(f.filename.size() - 3, 3, ".py") == 0;
}

// The innermost frame of `st` with a name (gdb prints "??" for frames it
// has no symbol for), nullptr when none.
const model::Frame* InnermostNamed(const model::StackSample& st) {
  for (const auto& f : st.frames)
    if (!f.name.empty() && f.name != "??" && f.name.rfind("___lldb_unnamed_symbol", 0) != 0) return &f;
  return nullptr;
}

// Every rank with a stack in the same call outside any collective, its
// thread not idle: no rank waits for another, the call itself does not
// return on any of them (a driver, kernel or library hang: every rank in
// cuModuleLoadData, or in a spinning kernel's launch). A py-spy thread
// marked idle is waiting (sleep, poll, a queue): for what, the stacks do not
// say. False when the ranks are not all in one such call, or when their
// stacks match a known library bug (checks/known_bug.h says more).
bool CommonCall(const RankAnalysis& a, const std::map<Rank, Where>& where, Finding* f) {
  const model::Frame* at = nullptr;
  std::vector<Rank> ranks;
  for (const auto& [r, w] : where) {
    if (!w.stack || w.stack->thread.find("(idle)") != std::string::npos) return false;
    const model::Frame* here = InnermostNamed(*w.stack);
    if (!here || (at && here->name != at->name)) return false;
    // One line of Python code: the same file and line too.
    if (at && IsPythonFrame(*at) && (here->filename != at->filename || here->line != at->line)) return false;
    at = here;
    ranks.push_back(r);
  }
  if (StacksMatchAKnownBug(a.job)) return false;
  // A log that says the call failed (a timeout, a store it could not
  // reach: store_host_waits_late_host's tracebacks in _create_c10d_store)
  // shows a call that returned, by raising: the stack is where it raised.
  if (AnyTimeoutEvent(a.job, ranks) || ReportsLostPeer(a.job, ranks)) return false;
  const std::string call = at->name;
  f->kind = Kind::kResourceDeadlock;
  f->op = call;
  f->roles.push_back({"in " + call, ranks});
  f->summary = RankWords(ranks) + ", every rank with a stack, " + Verb(ranks, "is", "are") + " in " + call +
               ", outside any collective: the stacks show no rank waiting for another; that call does not return on any "
               "of them";
  f->details.push_back(
      "if these stacks were taken while the job hung, the hang is inside " + call +
      " on every rank (a GPU kernel that does not finish, a driver or library call): not a rank's code path");
  // A Python frame innermost (faulthandler, py-spy without --native): the
  // call made from that line is not shown (testdata/torch/irecv2: both
  // ranks in req.wait() of an irecv, a P2P deadlock; sglang#35822: a
  // kernel that spins).
  if (IsPythonFrame(*at))
    f->details.push_back("the innermost frame is Python code (" + at->filename + ":" + std::to_string(at->line) +
                         "): the call made from that line is not in the stack; a wait() on an isend/irecv request "
                         "there is a P2P deadlock, a lock or a queue a deadlock in the program");
  f->fix_hint = "find what " + call +
                " waits for on every rank: the GPU (nvidia-smi shows 100% utilisation for a spinning kernel), the "
                "driver (dmesg), a lock; stacks with --native show the frames below it";
  return true;
}

// The ranks of `where` whose own log reports a crash (a traceback ending
// in an OOM, in an object that would not unpickle, a CUDA error; never a
// lost peer or a timeout): their stack is where they crashed, not where they
// wait. With some ranks that did not crash, the crash is the cause: a
// crashed_rank finding, the other ranks by where they are blocked, and
// true. False when no rank, or every rank, crashed.
bool AddCrashed(const RankAnalysis& a, const std::map<Rank, Where>& where, FindingSink* sink) {
  std::vector<Rank> crashed;
  std::map<std::string, std::vector<Rank>> blocked;
  for (const auto& [r, w] : where) {
    if (Crashed(a.job, r))
      crashed.push_back(r);
    else
      blocked[w.op.empty() ? "not in a collective" : "blocked in " + w.words + " in " + w.site].push_back(r);
  }
  if (crashed.empty() || crashed.size() == where.size()) return false;
  Finding crash = CrashedRankFinding(a, crashed, nullptr);
  for (const auto& [role, ranks] : blocked) crash.roles.push_back({role, ranks});
  AddStackEvidence(where, &crash);
  sink->Add(std::move(crash));
  return true;
}

// True when `d`'s Flight Recorder shows every op finished and no P2P op
// while its stack waits in a send or recv: gloo's recorder records no P2P op
// (p2p_tag: both ranks' dumps end with a completed all_reduce), so the stack
// is the only sign of where the rank waits.
bool WaitsPastItsDump(const model::RankDump& d, const Where& w) {
  if (!w.call.p2p()) return false;
  return std::all_of(d.ops.begin(), d.ops.end(), [](const model::OpRecord& op) { return op.completed && !op.is_p2p; });
}

// Every rank with a stack blocked in a point-to-point call (send, recv,
// batch_isend_irecv) and none elsewhere: no collective is involved, so a
// collective_mismatch would mislead. Stacks carry no peer and no tag, so:
// - sends and recvs at once (p2p_tag: rank 0 in send(tag=1), rank 1 in
//   recv(tag=2)): a p2p_mismatch naming every such rank, the pairs do not
//   match (tag, peer, size);
// - one direction only in a world of two ranks (given, or recorded in a
//   default pg's config): each can only wait for the other, a p2p_cycle
//   0 -> 1 -> 0 (both send first: gloo's large send and
//   NCCL's above the eager threshold wait for the recv);
// - one direction only among more ranks: a p2p_mismatch naming all, the
//   cycle itself is not visible.
// Ranks of a given world that left no stack may be the peers: an undecided
// naming them all as candidates then. False when a rank is not in P2P.
bool P2pOnly(const RankAnalysis& a, const std::map<Rank, Where>& where, Finding* f) {
  std::vector<Rank> ranks, senders;
  for (const auto& [r, w] : where) {
    if (!w.call.p2p()) return false;
    ranks.push_back(r);
    if (w.call.sends()) senders.push_back(r);
  }
  // A peer that died (a killed rank) is checks/lost_peer.h's, unless one of
  // these ranks timed out in its P2P call: its exit then closed the
  // connection the others report (g: rank 0's send timed out first).
  if (ReportsLostPeer(a.job, ranks) && !AnyTimeoutEvent(a.job, ranks)) return false;
  const bool both = !senders.empty() && senders.size() < ranks.size();
  std::string sites;
  for (const auto& role : f->roles) sites += (sites.empty() ? "" : "; ") + RankWords(role.ranks) + " in " + role.role;
  f->summary = "the ranks' stacks are in point-to-point calls that do not complete: " + sites;
  f->fix_hint =
      "compare the peer, tag, size and dtype of each send with the recv meant to meet it (stacks show none of "
      "them; NCCL's Flight Recorder records peers and sizes, gloo's records no P2P op); pair sends before recvs "
      "by rank parity, or use batch_isend_irecv";
  const std::vector<Rank>& unseen = a.world.without_dump;
  if (!unseen.empty() && !a.world.inferred) {
    f->kind = Kind::kUndecided;
    f->candidates = ranks;
    f->candidates.insert(f->candidates.end(), unseen.begin(), unseen.end());
    std::sort(f->candidates.begin(), f->candidates.end());
    f->summary += "; " + RankWords(unseen) + " of the " + std::to_string(a.world.size) +
                  " ranks left no stack and may be the peers";
    f->would_decide = "the stacks of " + RankWords(unseen) + ", or a record of each call's peer and tag";
    return true;
  }
  f->culprit_ranks = ranks;
  if (!both && ranks.size() == 2 && a.world.size == 2 && !a.world.inferred) {
    f->kind = Kind::kP2pCycle;
    f->cycle = ranks;
    f->fix_hint =
        "pair sends and recvs by parity (even ranks send first, odd ranks receive first) or post them together "
        "with batch_isend_irecv";
    f->summary = std::string("both ranks of the 2-rank world are blocked in a ") +
                 (senders.empty() ? "recv" : "send") + ", each from or to the only other rank: " +
                 std::to_string(ranks[0]) + " -> " + std::to_string(ranks[1]) + " -> " + std::to_string(ranks[0]) +
                 " (" + sites + ")";
    return true;
  }
  f->kind = Kind::kP2pMismatch;
  if (both)
    f->summary += ": sends and recvs that do not pair (a different tag, peer, size or dtype)";
  else
    f->summary += std::string(": every rank ") + (senders.empty() ? "receives, none sends" : "sends, none receives");
  if (a.world.inferred) f->summary += " (world size unknown: the peers may be ranks that left no data)";
  return true;
}

// Every rank with a stack blocked at one call site while ranks of a world
// that was given (not inferred from the files) left no stack: the waiters
// wait for those ranks. With the world inferred, the absent ranks are not
// known to exist, and the waiters are never blamed: false then.
bool AbsentWithoutStack(const RankAnalysis& a, const Sides& sides, Finding* f) {
  const std::vector<Rank>& unseen = a.world.without_dump;
  if (sides.size() != 1 || unseen.empty() || a.world.inferred) return false;
  // Stacks from text logs (a timeout's traceback) come with lines the log
  // checks read better (which rank logged nothing): stack dumps only here.
  for (const auto& d : a.job.dumps)
    if (!d.events.empty()) return false;
  f->kind = Kind::kMissingRank;
  f->culprit_ranks = unseen;
  f->roles.push_back({"no stack", unseen});
  f->summary = RankWords(sides[0].second) + " " + Verb(sides[0].second, "is", "are") + " blocked in " +
               sides[0].first + " while " + RankWords(unseen) + " of the " + std::to_string(a.world.size) +
               " ranks left no stack: " + Verb(unseen, "it", "they") + " never arrived there (or died)";
  f->fix_hint = "find what the absent ranks are doing (py-spy dump them, read their stderr for an exception or exit)";
  return true;
}

}  // namespace

void StackSitesCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<Rank, Where> where;
  for (const auto& d : a.job.dumps)
    if (!d.stacks.empty()) {
      Where w = WhereOf(d);
      // Dumps with entries speak for themselves, but for P2P past them.
      if (!d.ops.empty() && !WaitsPastItsDump(d, w)) continue;
      // Only the traceback of a thread that died (ThreadError): no stack of
      // where the rank is now.
      if (!w.stack && ThreadError(d)) continue;
      where[d.rank] = w;
    }
  if (where.size() < 2) return;
  // The fresh-user tester's torchrun log of one OOM and two gloo
  // "Connection closed by peer"; broadcast_object_list whose receivers
  // fail to unpickle while the sender waits in its next all_reduce.
  if (AddCrashed(a, where, sink)) return;
  std::map<std::string, std::vector<Rank>> by_site;
  std::vector<Rank> elsewhere;
  for (const auto& [r, w] : where) (w.op.empty() ? elsewhere : by_site[w.words + " in " + w.site]).push_back(r);
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
  if (!P2pOnly(a, where, &f) && !Decide(sides, elsewhere, &f) && !AbsentWithoutStack(a, sides, &f)) return;
  if (f.kind == Kind::kMissingRank)
    for (Rank r : elsewhere)  // alive, a helper thread dead: say so (checks/missing_rank.h does too)
      if (const model::RankDump* d = a.job.Find(r); d && ThreadError(*d)) f.summary += "; " + ThreadErrorWords(r, *d);
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
