#include "hangdx/analyze/passes/verdict.h"

#include <cctype>

#include <algorithm>
#include <set>
#include <string_view>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/stack_threads.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

// Only a device-level input, with no finding. A snapshot read only in part
// may have lost the very ops that deadlock: say so in the verdict, not only
// at the end.
std::string DeviceOnlyVerdict(const model::Job& job) {
  size_t skipped = 0;
  for (const auto& g : job.diagnostics)
    for (const auto& dev : job.device)
      if (g.severity != model::Diagnostic::Severity::kInfo && g.file == dev.origin) ++skipped;
  if (!skipped)
    return "No hang found: no op of the device-level snapshot is deadlocked or waits for an op that nobody issues.";
  return "No hang found in what could be read, but " + std::to_string(skipped) + " part" + (skipped == 1 ? "" : "s") +
         " of the device snapshot had to be skipped (see the end): fix " + (skipped == 1 ? "it" : "them") +
         " and rerun before trusting this.";
}

// No rank's records, but messages hangdx knows were read (a vLLM engine's
// log, a launcher's console with no rank prefix). One stall warning per row
// and file, and nothing else that claims anything, shows no hang: a lone
// warning is no hang (checks/named_culprit.h says so of a rank's). Messages
// that claim nothing (a version line, NCCL's set-up, a launcher's config) are
// no hang either: the files were read, and a healthy job prints just that
// (NCCL logs nothing while collectives run), so the verdict says what to
// collect instead of calling the input unusable. A timeout, crash, mismatch
// or repeated stall that names no rank cannot be placed: no usable input,
// naming the message.
std::string RanklessVerdict(const model::Job& job) {
  // The first message of each kind, with its file.
  std::pair<const model::RecognisedMessage*, const std::string*> first{}, stall{}, claim{};
  for (const auto& read : job.file_reads)
    for (const auto& m : read.messages) {
      bool harmless = m.event == "info" || m.event == "config" || m.event == "progress" || m.event == "init";
      bool lone_stall = m.event == "stall" && m.count == 1;
      auto& slot = lone_stall ? stall : harmless ? first : claim;
      if (!slot.first) slot = {&m, &read.file};
      if (!first.first) first = {&m, &read.file};
    }
  auto what = [](const auto& p) { return *p.second + " holds " + p.first->message_id + " (" + p.first->event + ")"; };
  if (claim.first)
    return "No usable input: " + what(claim) + ", but names no rank hangdx can place it on: pass --rank " +
           *claim.second + "=RANK if the file is one rank's.";
  if (stall.first)
    return "No hang found: " + what(stall) + ", a lone stall warning that names no rank; by itself it is not a hang.";
  if (first.first)
    return "No hang found: " + what(first) +
           ", and nothing read claims a hang or names a rank hangdx can place; a healthy job's log looks the same, so "
           "if the job is "
           "stuck, collect its Flight Recorder dumps or stacks.";
  return "No usable input: no dump, log, stack dump or snapshot that names a rank could be read.";
}

// How many warnings and errors are about a file that records were taken
// from (a seq far from its pg's, a record cut short, lines whose rank is
// unknown) or whose claims (a timeout, a crash) could not be placed (a rank
// out of range): "no hang" rests on those files, so the verdict must say
// so, not only the list at the end. Warnings about files left out (a second
// dump of one rank) do not count.
size_t WarningsAboutFilesUsed(const model::Job& job) {
  std::set<std::string_view> used;
  for (const auto& d : job.dumps) used.insert(d.file);
  // And files whose messages claim something (a timeout, a crash) that
  // could not be placed: what they say is missing from "no hang".
  for (const auto& read : job.file_reads)
    for (const auto& m : read.messages)
      if (m.event != "info" && m.event != "config" && m.event != "progress" && m.event != "init" && m.event != "op" &&
          m.event != "status")
        used.insert(read.file);
  size_t n = 0;
  for (const auto& g : job.diagnostics)
    if (g.severity != model::Diagnostic::Severity::kInfo && used.count(g.file)) ++n;
  return n;
}

bool AnyOp(const model::Job& job) {
  for (const auto& d : job.dumps)
    if (!d.ops.empty() || !d.pg_status.empty()) return true;
  return false;
}

// Logs of known ranks that record no collective (a warning at exit, a
// set-up line): "their collectives match" would claim what was not seen.
// Ranks whose process shut down in order are named: at the end of a
// program that is the normal case, and the user sees what was read.
// Stack dumps only, every rank's speaking thread in one collective (the
// fresh-user tester's tri_cycle stacks: three ranks in all_reduce of three
// sub-groups): "records no collective" was false. The op, "" otherwise.
std::string OneCollectiveOfStacks(const model::Job& job) {
  std::string op;
  for (const auto& d : job.dumps) {
    if (d.stacks.empty() || !d.events.empty() || !d.ops.empty()) return "";
    const model::StackSample* st = SpeakingThread(d);
    CollectiveCall c = st ? CollectiveIn(*st) : CollectiveCall{};
    if (!c.found() || (!op.empty() && c.Words() != op)) return "";
    op = c.Words();
  }
  return op;
}

std::string NoOpVerdict(const model::Job& job) {
  using K = model::LogEvent::Kind;
  if (std::string op = OneCollectiveOfStacks(job); !op.empty() && job.dumps.size() >= 2) {
    std::vector<model::Rank> ranks;
    for (const auto& d : job.dumps) ranks.push_back(d.rank);
    return "Undecided: " + RankWords(ranks) + ", every rank with a stack, " + Verb(ranks, "is", "are") +
           " in " + op + " and none elsewhere; stacks name no pg, so if they were taken while the job hung, a rank "
           "whose stack was not given, sub-groups used in different orders, or a collective that does not finish "
           "(network, NCCL) can each be the cause: Flight Recorder dumps (TORCH_FR_BUFFER_SIZE) tell which.";
  }
  std::vector<model::Rank> ranks, ended;
  bool claims = false;  // an event that says something went wrong
  // The first exit with a failing code (torchrun's root cause "exitcode : 3"
  // of an os._exit(3)): the job failed, though not in a collective.
  const model::LogEvent* failed = nullptr;
  model::Rank failed_rank = -1;
  for (const auto& d : job.dumps) {
    if (ranks.empty() || ranks.back() != d.rank) ranks.push_back(d.rank);
    if (EndedByItself(d)) ended.push_back(d.rank);
    for (const auto& e : d.events) {
      claims = claims || (e.kind != K::kExit && e.kind != K::kConfig && e.kind != K::kProgress && e.kind != K::kOther);
      if (e.kind == K::kExit && e.exit_code > 0 && !failed) failed = &e, failed_rank = d.rank;
    }
  }
  claims = claims || failed;
  std::string v = "No hang found: what was read of " + RankWords(ranks) + " records no collective" +
                  (claims ? "" : " and claims no hang");
  if (failed)
    v += "; rank " + std::to_string(failed_rank) + " exited with code " + std::to_string(failed->exit_code) + " (" +
         (failed->message_id.empty() ? std::string("its log") : failed->message_id) +
         "): the job failed there, not in a collective";
  if (!ended.empty())
    v += "; " + RankWords(ended) + " shut down in order (" + EndedByItself(*job.Find(ended.front()))->message_id + ")";
  return v + ".";
}

// The ranks of a pg that issued fewest of its collectives when the others
// issued at least two more: with NCCL INFO enqueue lines (async, no
// completion) nothing proves a hang, but if the job is stuck the rank that
// stopped issuing is the one to look at. "" when no pg lags so.
std::string LaggardNote(const RankAnalysis& a) {
  for (int gi = 0; gi < a.groups.size(); ++gi) {
    const Group& g = a.groups[gi];
    int64_t lo = INT64_MAX, hi = -1;
    std::vector<model::Rank> low;
    for (size_t i = 0; i < g.members.size() && i < g.coll.size(); ++i) {
      if (!g.dump[i] || g.coll[i].empty()) continue;
      int64_t last = g.coll[i].back().first;
      hi = std::max(hi, last);
      if (last < lo) lo = last, low.clear();
      if (last == lo) low.push_back(g.members[i]);
    }
    if (hi < 0 || hi - lo < 2) continue;
    std::string who = RankWords(low);
    who[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(who[0])));
    return " " + who + " issued fewer collectives of " + g.Label() + " than the others (last seq " +
           std::to_string(lo) + ", others up to " + std::to_string(hi) + "): if the job is stuck, look at " +
           Verb(low, "it", "them") + " first.";
  }
  return "";
}

std::string NoFindingVerdict(const RankAnalysis& a) {
  const model::Job& job = a.job;
  if (job.dumps.empty() && !job.device.empty()) return DeviceOnlyVerdict(job);
  if (job.dumps.empty()) return RanklessVerdict(job);
  std::string v = AnyOp(job) ? "No hang found: every process group's recorded collectives match on all " +
                                   std::to_string(job.dumps.size()) + " ranks seen."
                             : NoOpVerdict(job);
  bool gloo = false;
  for (const auto& d : job.dumps)
    for (const auto& pg : a.History(d).pgs())
      for (std::string_view b : pg.backends) gloo = gloo || b == "gloo";
  // Said even when no P2P op shows: gloo's dump cannot show one, so its
  // absence proves nothing (testdata/torch/g: a send/send cycle whose dumps
  // hold one all_reduce). Worded as a condition, not a claim.
  if (gloo)
    v += " (gloo records no P2P op in the Flight Recorder: if the job uses send/recv, a deadlock there does not show "
         "here; read the ranks' stderr or stacks.)";
  // Every kept instance is a problem or still pending.
  if (!a.instances.list.empty()) v += " Some are still in progress." + LaggardNote(a);
  if (!a.world.without_dump.empty()) v += " No dump from " + RankWords(a.world.without_dump) + ".";
  if (size_t n = WarningsAboutFilesUsed(job))
    v += " " + std::to_string(n) + (n == 1 ? " warning is" : " warnings are") +
         " about the files read (see the end): fix what they name before trusting this.";
  return v;
}

// A file that holds a crash no rank could be given (a worker's traceback
// saved under a name with no number), beside a finding: the crash may be a
// culprit's and change the answer (a missing rank that crashed), so the
// verdict says so, not only the notes at the end. "" when there is none.
std::string UnplacedCrash(const model::Job& job) {
  std::set<std::string_view> used;
  for (const auto& d : job.dumps) {
    used.insert(d.file);
    used.insert(d.extra_files.begin(), d.extra_files.end());
  }
  for (const auto& read : job.file_reads) {
    if (read.rank >= 0 || used.count(read.file)) continue;
    for (const auto& m : read.messages)
      if (m.event == "crash")
        return " (" + read.file + " holds a crash (" + m.message_id +
               ") that names no rank: if it is a culprit's, that rank crashed; pass --rank " + read.file + "=RANK.)";
  }
  return "";
}

}  // namespace

void VerdictPass(const RankAnalysis& a, FindingSink*, Diagnosis* out) {
  out->hang = false;
  for (const auto& f : out->findings)
    if (f.severity == Severity::kError) out->hang = true;
  if (out->findings.empty()) {
    out->verdict = NoFindingVerdict(a);
    return;
  }
  const Finding& f = out->findings.front();
  std::string head = f.severity == Severity::kError ? (f.hang ? "HANG: " : "ERROR (no hang): ") : "WARNING: ";
  if (f.kind == Kind::kCollectiveMismatch || f.kind == Kind::kSizeMismatch)
    head = f.hang ? "HANG (mismatch): " : "ERROR (mismatch, raised; no hang): ";
  out->verdict = head + f.summary + ".";
  if (!f.culprit_ranks.empty())
    out->verdict += " Look first at " + RankWords(f.culprit_ranks) +
                    (f.ranks_are_pg_local ? " of pg " + f.pg_name : std::string()) + ".";
  if (f.severity == Severity::kError) out->verdict += UnplacedCrash(a.job);
  if (!a.job.unreadable.empty()) {
    std::vector<model::Rank> bad;
    for (const auto& [r, file] : a.job.unreadable) bad.push_back(r);
    if (std::find(f.culprit_ranks.begin(), f.culprit_ranks.end(), bad.front()) == f.culprit_ranks.end())
      out->verdict += " (The dumps of " + RankWords(bad) + " could not be read.)";
  }
}

}  // namespace hangdx::analyze
