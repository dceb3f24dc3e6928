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

// The ranks that can be the peer the losers lost when no message names it.
struct PeerCandidates {
  std::vector<Rank> ended;    // exited 0 while the others still needed them (LogEvent::ExitRole::kEndedInOrder)
  std::vector<Rank> silent;   // their file was given and is empty: no log at all
  std::vector<Rank> quiet;    // their file was given and holds nothing about the failure
  std::vector<Rank> ungiven;  // no file of theirs was given: nothing is known of them
};

PeerCandidates FindCandidates(const RankAnalysis& a, const std::vector<Rank>& losers) {
  PeerCandidates c;
  std::set<Rank> given;
  for (const auto& read : a.job.file_reads)
    if (read.rank >= 0) given.insert(read.rank);
  for (Rank r : a.world.without_dump)
    (a.job.LeftAFile(r) ? c.quiet : given.count(r) ? c.silent : c.ungiven).push_back(r);
  for (const auto& d : a.job.dumps) {
    const LogEvent* e = EndedByItself(d);
    if (e && e->exit_role == LogEvent::ExitRole::kEndedInOrder &&
        !std::binary_search(losers.begin(), losers.end(), d.rank))
      c.ended.push_back(d.rank);
  }
  return c;
}

// Neither a peer named nor one rank that can be it, but two or more: the
// ranks that left a log with nothing in it about the failure may have
// exited, been killed or still run, and of the ranks whose files were not
// given nothing is known. Which of them the lost peer was the logs cannot
// tell.
void DescribeUnnamedPeer(const std::vector<Rank>& losers, const PeerCandidates& c, const std::string& addr,
                         Finding* out) {
  Finding& f = *out;
  f.kind = Kind::kUndecided;
  std::vector<Rank> all = c.quiet;
  all.insert(all.end(), c.ungiven.begin(), c.ungiven.end());
  std::sort(all.begin(), all.end());
  f.candidates = all;
  std::string who;
  if (!c.quiet.empty()) {
    f.roles.push_back({"log shows no error", c.quiet});
    who = RankWords(c.quiet) + " left a log without an error (" + Verb(c.quiet, "it", "they") +
          " may have exited, been killed or still run)";
  }
  if (!c.ungiven.empty()) {
    f.roles.push_back({"file not given", c.ungiven});
    who += (who.empty() ? "" : "; ") + RankWords(c.ungiven) + " gave no file (" +
           Verb(c.ungiven, "its was", "theirs were") + " not handed to hangdx: not proven dead)";
  }
  f.summary = RankWords(losers) + " lost " + Verb(losers, "its", "their") + " connection to a peer" +
              (addr.empty() ? "" : " (" + addr + ")") + ", and the evidence cannot decide which rank it was" +
              ": " + who;
  f.would_decide =
      "the logs of " + RankWords(all) + ", their Flight Recorder dumps or stacks (where each one waits), or the launcher's exit codes: the peer at "
      "that address is the rank whose process ended";
}

// True when some rank's log reports a timed-out wait (IsTimeoutEvent).
bool AnyTimeout(const model::Job& job) {
  for (const auto& d : job.dumps)
    for (const auto& e : d.events)
      if (IsTimeoutEvent(e)) return true;
  return false;
}

bool AnyRecords(const model::Job& job) {
  for (const auto& d : job.dumps)
    if (!d.ops.empty()) return true;
  return false;
}

// Neither a peer named nor a rank the files show without an error: the
// rank that went away is one whose file was not given (or the world is
// larger than the files show).
Finding DescribeUnseenPeer(const RankAnalysis& a, const std::vector<Rank>& losers, const std::string& addr,
                           std::vector<Evidence> lines) {
  Finding f;
  f.kind = Kind::kUndecided;
  f.severity = Severity::kError;
  f.hang = true;
  f.roles.push_back({"lost the connection", losers});
  f.evidence = std::move(lines);
  f.summary = RankWords(losers) + " lost " + Verb(losers, "its", "their") + " connection to a peer" +
              (addr.empty() ? "" : " (" + addr + ")") + ", and no file given says which rank it was" +
              (a.world.inferred ? " (world size unknown: pass --world-size)" : "");
  f.details.push_back(
      "a connection closed or reset by the peer means the peer's process ended; the ranks that report it are its "
      "victims");
  f.would_decide = "the logs (or Flight Recorder dumps) of the other ranks, or the launcher's exit codes: the peer at "
                   "that address is the rank whose process ended";
  f.fix_hint = "collect every rank's log; the one that ends without this error, or the launcher's exit record, "
               "names the rank that went away";
  return f;
}

}  // namespace

void LostPeerCheck(const RankAnalysis& a, FindingSink* sink) {
  std::vector<Rank> losers;
  std::set<Rank> peers;
  std::vector<Evidence> lines;
  std::string addr;
  for (const auto& d : a.job.dumps) {
    if (a.Crashed(d.rank)) return;  // the crash itself is in the logs: its own finding
    bool lost = false;
    for (const auto& e : d.events) {
      // A store client that never connected lost no peer: checks/store_wait.h.
      if (e.kind != LogEvent::Kind::kPeerLost || IsStoreConnectFailure(e)) continue;
      lost = true;
      if (e.peer >= 0 && e.peer != d.rank) peers.insert(e.peer);
      if (addr.empty()) addr = e.peer_addr;
      if (lines.size() < kEvidencePerSide)
        lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
    if (lost && d.rank >= 0 && (losers.empty() || losers.back() != d.rank)) losers.push_back(d.rank);
  }
  if (losers.empty() || AnInstanceExplainsIt(a)) return;
  bool any_named = !peers.empty();  // before the losers are taken out: then they named each other
  for (Rank r : losers) peers.erase(r);
  std::vector<Rank> culprits(peers.begin(), peers.end());
  const char* role = "the peer they lost";
  std::string why = " went away";
  PeerCandidates c;
  if (culprits.empty()) {
    c = FindCandidates(a, losers);
    // A rank that exited 0 while the others still talked to it left for
    // sure; a given file that is empty is no log at all; else one rank that
    // can be the peer is it (the connection closed: its process ended), and
    // two or more are undecided (a rank whose file was not given is not
    // proven dead: hangdx was not shown it).
    if (!c.ended.empty()) {
      culprits = c.ended, role = "exited 0";
      why = std::string(" exited 0 (its launcher's failure summary) before ") + Verb(c.ended, "its", "their") + " peers were done";
    } else if (!c.silent.empty()) {
      culprits = c.silent, role = "no log";
      why = " left no log at all";
    } else if (c.quiet.size() + c.ungiven.size() == 1) {
      culprits = c.quiet.empty() ? c.ungiven : c.quiet;
      role = c.quiet.empty() ? "the only other rank" : "stopped logging";
      why = c.quiet.empty() ? ", whose file was not given, is the only other rank and went away"
                            : " stopped logging without an error";
    }
  }
  Finding f;
  f.severity = Severity::kError;
  f.hang = true;
  f.roles.push_back({"lost the connection", losers});
  f.evidence = std::move(lines);
  if (culprits.empty()) {
    if (c.quiet.empty() && c.ungiven.empty()) {
      // Every rank seen lost a peer no message names, and none is silent: the
      // peer is a rank whose file was not given. A failed collective is no
      // healthy job. (Ranks that name each other are both alive: nothing to say.)
      // Only when the world is unknown (a known world whose every rank is seen
      // holds the peer among them) and no rank seen timed out (then the peer
      // closed its end after its own timeout: unexplained_timeout's case).
      // From logs alone: records have their own checks, which say more.
      if (!any_named && a.world.inferred && !AnyTimeout(a.job) && !AnyRecords(a.job) &&
          a.job.dumps.size() == losers.size())  // every rank seen lost the peer
        sink->Add(DescribeUnseenPeer(a, losers, addr, std::move(f.evidence)));
      return;
    }
    DescribeUnnamedPeer(losers, c, addr, &f);
    sink->Add(std::move(f));
    return;
  }
  f.kind = Kind::kCrashedRank;
  f.culprit_ranks = culprits;
  f.roles.push_back({role, culprits});
  f.summary = RankWords(losers) + " lost " + Verb(losers, "its", "their") + " connection to a peer while " +
              RankWords(culprits) + why + ": " + Verb(culprits, "it", "they") +
              (c.ended.empty() ? " most likely died (crash, kill, exit)" : " ended while still needed");
  f.details.push_back(
      "a connection closed or reset by the peer means the peer's process ended; the ranks that "
      "report it are its victims");
  f.fix_hint =
      "find why the peer's process ended (its stderr, the launcher's exit codes, dmesg for the OOM killer); "
      "the other ranks' errors are its consequence";
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
