#include "hangdx/analyze/passes/unexplained_timeout.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::Rank;

namespace {

// The torch.distributed collective a rank's traceback is in (the innermost
// distributed_c10d.py frame), "" if none.
std::string CollectiveInTraceback(const model::RankDump& d) {
  for (const auto& s : d.stacks)
    for (const auto& fr : s.frames)
      if (fr.filename.find("distributed_c10d.py") != std::string::npos && fr.name != "wrapper") return fr.name;
  return "";
}

// The highest collective seq `d` records per pg, its op completed when
// `completed_only`.
std::map<std::string_view, int64_t> LastSeqs(const model::RankDump& d, bool completed_only) {
  std::map<std::string_view, int64_t> out;
  for (const auto& op : d.ops) {
    if (op.collective_seq < 0 || op.is_p2p || (completed_only && !op.completed)) continue;
    int64_t& top = out.try_emplace(op.pg_name, -1).first->second;
    top = std::max(top, op.collective_seq);
  }
  return out;
}

// Per pg, the lowest of the last collective seqs the ranks that timed out
// recorded: the collective they timed out in is there or later.
std::map<std::string_view, int64_t> TimedOutFloor(const RankAnalysis& a, const std::vector<Rank>& timed_out) {
  std::map<std::string_view, int64_t> floor;
  for (Rank t : timed_out)
    if (const model::RankDump* o = a.job.Find(t))
      for (const auto& [pg, seq] : LastSeqs(*o, false)) {
        auto [it, fresh] = floor.try_emplace(pg, seq);
        if (!fresh) it->second = std::min(it->second, seq);
      }
  return floor;
}

// The ranks that did not time out whose Flight Recorder shows a pg's
// collective completed at or past the floor of the ranks that did: they
// took part in the collective the others timed out in (the fresh-user
// tester's bcast_src: ranks 0 and 2 time out in broadcast seq 3 with a
// different src, rank 1's dump has it completed; was "rank 1 ... likely
// never joined it"). Ascending.
std::vector<Rank> JoinedRanks(const RankAnalysis& a, const std::vector<Rank>& timed_out) {
  std::vector<Rank> out;
  std::map<std::string_view, int64_t> floor = TimedOutFloor(a, timed_out);
  if (floor.empty()) return out;
  for (const auto& d : a.job.dumps) {
    if (d.ops.empty() || std::binary_search(timed_out.begin(), timed_out.end(), d.rank)) continue;
    for (const auto& [pg, seq] : LastSeqs(d, true))
      if (auto it = floor.find(pg); it != floor.end() && seq >= it->second) {
        out.push_back(d.rank);
        break;
      }
  }
  return out;
}

// The ranks with data that report no timeout, lost no peer and are not
// `joined`, ascending (`timed_out` and `joined` are ascending: dumps come
// by rank). A rank whose connection to a peer closed was in the collective
// too (gloo's "Connection closed by peer" on the side that did not time out
// first).
std::vector<Rank> QuietRanks(const RankAnalysis& a, const std::vector<Rank>& timed_out,
                             const std::vector<Rank>& joined) {
  using K = model::LogEvent::Kind;
  std::vector<Rank> out;
  for (const auto& d : a.job.dumps) {
    if (std::binary_search(timed_out.begin(), timed_out.end(), d.rank) ||
        std::binary_search(joined.begin(), joined.end(), d.rank))
      continue;
    bool in_it = std::any_of(d.events.begin(), d.events.end(),
                             [](const model::LogEvent& e) { return e.kind == K::kPeerLost || e.kind == K::kAbort; });
    if (!in_it) out.push_back(d.rank);
  }
  return out;
}

// Lines of the quiet ranks that say what they did instead: a thread's
// exception, a crash, an exit (one per rank, within the evidence bound).
void AddQuietEvidence(const RankAnalysis& a, const std::vector<Rank>& quiet, std::vector<Evidence>* lines) {
  using K = model::LogEvent::Kind;
  for (Rank r : quiet) {
    const model::RankDump* d = a.job.Find(r);
    if (!d || lines->size() >= 2 * kEvidencePerSide) return;
    for (const auto& e : d->events)
      if (e.kind == K::kThreadError || e.kind == K::kCrash || e.kind == K::kExit) {
        lines->push_back({e.file, r, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
        break;
      }
  }
}

// The file of each rank of `ranks` that the job holds but no format read,
// not empty (a log of nothing hangdx knows: a rank that slept, or printed
// only its own lines); "" for the others. Its rank had no timeout to log.
std::map<Rank, std::string> UnreadLogs(const RankAnalysis& a, const std::vector<Rank>& ranks) {
  std::map<Rank, std::string> out;
  for (const auto& fr : a.job.file_reads)
    if (fr.format.empty() && fr.bytes > 0 && std::binary_search(ranks.begin(), ranks.end(), fr.rank))
      out.emplace(fr.rank, fr.file);
  return out;
}

// "no log from rank 3", or, for a rank whose log holds nothing hangdx
// knows, "rank 1's log (logs/rank_1.log) has no line hangdx knows: no
// timeout, no error" (the fresh-user tester's sleep_r1: 'no log from rank
// 1' beside that log).
std::string MissingWords(const std::vector<Rank>& missing, const std::map<Rank, std::string>& unread) {
  std::vector<Rank> none;
  std::string said;
  for (Rank r : missing) {
    auto it = unread.find(r);
    if (it == unread.end()) {
      none.push_back(r);
      continue;
    }
    if (said.size() < 400)
      said += (said.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + "'s log (" + it->second +
              ") has no line hangdx knows: no timeout, no error";
  }
  if (none.empty()) return said;
  return "no log from " + RankWords(none) + (said.empty() ? "" : "; " + said);
}

bool AnyWaitStateError(const FindingSink& sink) {
  for (const auto& e : sink.entries())
    if (e.scope == Scope::kWaitState && e.finding.severity == Severity::kError) return true;
  return false;
}

}  // namespace

void UnexplainedTimeoutPass(const RankAnalysis& a, FindingSink* sink, Diagnosis*) {
  if (AnyWaitStateError(*sink)) return;
  std::vector<Rank> timed_out;
  std::vector<Evidence> lines;
  std::string op;
  for (const auto& d : a.job.dumps)
    for (const auto& e : d.events) {
      if (!IsTimeoutEvent(e)) continue;
      if (timed_out.empty() || timed_out.back() != d.rank) {
        timed_out.push_back(d.rank);
        if (lines.size() < kEvidencePerSide)
          lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
      }
      if (op.empty()) op = e.op.empty() ? CollectiveInTraceback(d) : e.op;
    }
  if (timed_out.empty()) return;
  Finding f;
  f.kind = Kind::kUndecided;
  f.severity = Severity::kError;
  f.hang = true;
  f.op = op;
  const std::vector<Rank>& missing = a.world.without_dump;
  // The silent ranks are the suspects only when they are fewer than the
  // ranks that timed out waiting: one timeout of seven ranks shows nothing
  // about the six others, and naming them would invent a culprit.
  if (missing.size() <= timed_out.size()) {
    f.culprit_ranks = missing;
    f.candidates = missing;
  }
  // With every rank seen, a rank whose data shows no timeout while the
  // others' collective timed out did not join it (or still waits under a
  // longer timeout): the suspects, under the same bound.
  std::vector<Rank> quiet, joined;  // joined: completed it by their dumps
  if (missing.empty()) {
    joined = JoinedRanks(a, timed_out);
    quiet = QuietRanks(a, timed_out, joined);
  }
  if (!quiet.empty() && quiet.size() <= timed_out.size()) {
    f.culprit_ranks = quiet;
    f.candidates = quiet;
    AddQuietEvidence(a, quiet, &lines);
  } else {
    quiet.clear();
  }
  if (!missing.empty()) f.would_decide = "the logs or Flight Recorder dumps of " + RankWords(missing);
  if (!quiet.empty()) joined.clear();  // a suspect is named: its finding, not a root disagreement
  f.roles.push_back({"timed out", timed_out});
  if (!joined.empty()) f.roles.push_back({"completed it (Flight Recorder)", joined});
  if (!missing.empty()) f.roles.push_back({"no log", missing});
  if (!quiet.empty()) f.roles.push_back({"no timeout", quiet});
  f.summary = RankWords(timed_out) + " " + Verb(timed_out, "reports", "report") + " a timed-out " +
              (op.empty() ? std::string("collective") : op) + ", but the data given does not show whom " +
              Verb(timed_out, "it waits", "they wait") + " for: " +
              (!missing.empty() ? MissingWords(missing, UnreadLogs(a, missing))
               : (!quiet.empty() ? "the timeouts name no peer; " + RankWords(quiet) + ", seen, " +
                                       Verb(quiet, "reports", "report") + " no timeout and likely never joined it"
                                 : std::string("the timeouts name no peer and no rank is missing among those seen")) +
                     (a.world.inferred ? " (world size unknown: pass --world-size)" : ""));
  if (!joined.empty()) {
    // Every rank reached the collective and some completed it: the ranks
    // disagree on what the recorder does not keep (gloo's and NCCL's
    // entries name no root), or a message was lost.
    f.candidates = timed_out;
    f.candidates.insert(f.candidates.end(), joined.begin(), joined.end());
    std::sort(f.candidates.begin(), f.candidates.end());
    f.summary += "; by the Flight Recorder " + RankWords(joined) +
                 " completed it, so every rank reached it and the ranks disagree on what the recorder does not keep: "
                 "a root (src or dst) or a peer";
    f.would_decide = "the src/dst (root) each rank passed to this " + (op.empty() ? std::string("collective") : op) +
                     " (the program, or TORCH_DISTRIBUTED_DEBUG=DETAIL, whose fingerprints compare the ranks' calls)";
  }
  f.evidence = std::move(lines);
  f.details.push_back("a collective times out when some member does not join it; the members that did are these");
  if (!quiet.empty())
    f.details.push_back("a rank in the collective times out with the others; one that reports no timeout was "
                        "elsewhere (its main thread's stack, e.g. py-spy dump, shows where)");
  f.fix_hint = !joined.empty() ? "make every rank pass the same src/dst (root) to this collective"
               : !quiet.empty()  ? "look at what " + RankWords(quiet) + " did instead of the collective"
               : missing.empty() ? "collect the logs (or Flight Recorder dumps) of every rank of the job"
                               : "collect the log (or Flight Recorder dump) of the missing ranks: one of them "
                                 "never joined the collective";
  sink->Begin("unexplained_timeout", Scope::kWaitState);
  sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
