#include "hangdx/analyze/checks/known_bug.h"

#include <map>
#include <set>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/checks/known_bugs/signatures.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using known_bugs::Affects;
using known_bugs::Signature;
using model::Rank;

namespace {

// What the job says about the settings and library versions the signatures
// ask about.
struct JobFacts {
  std::map<std::string, std::set<std::string>> settings;  // NAME -> values some rank logged
  std::string any_version;                                // a library version some rank recorded
};

JobFacts FactsOf(const model::Job& job) {
  JobFacts f;
  for (const auto& d : job.dumps) {
    if (f.any_version.empty()) f.any_version = d.comm_lib_version;
    for (const auto& e : d.events)
      if (e.kind == model::LogEvent::Kind::kConfig && !e.setting.empty()) f.settings[e.setting].insert(e.value);
  }
  return f;
}

// How rank `d` meets signature `s`: the thread whose stack has its frames
// (nullptr: none, or a setting or version rules it out).
struct RankMatch {
  const model::StackSample* stack = nullptr;
  Affects version = Affects::kUnknown;
};

RankMatch MatchRank(const Signature& s, const model::RankDump& d, const JobFacts& facts) {
  RankMatch m;
  for (const auto& [name, want] : s.settings) {
    auto it = facts.settings.find(name);
    if (it != facts.settings.end() && !it->second.count(want)) return m;  // the job runs another value
  }
  // NCCL's and RCCL's version is the dump's communication library; PyTorch's
  // own release is not in the model, so a pytorch row's range is unknown.
  if (s.library != "pytorch") {
    const std::string& v = d.comm_lib_version.empty() ? facts.any_version : d.comm_lib_version;
    m.version = s.AffectsVersion(known_bugs::ParseVersion(v));
  }
  if (m.version == Affects::kNo || (s.version_required && m.version != Affects::kYes)) return m;
  for (const auto& st : d.stacks)
    if (s.MatchesStack(st)) {
      m.stack = &st;
      break;
    }
  return m;
}

// A signature every rank with a stack matches, with each rank's match.
struct Candidate {
  const Signature* sig = nullptr;
  std::vector<std::pair<Rank, RankMatch>> ranks;
  bool version_known = true;
};

// The best signature every rank with a stack matches; sig nullptr when none.
Candidate BestCandidate(const model::Job& job, const JobFacts& facts) {
  Candidate best;
  for (const Signature& s : known_bugs::BuiltinSignatures()) {
    Candidate c;
    c.sig = &s;
    for (const auto& d : job.dumps) {
      if (d.stacks.empty()) continue;
      RankMatch m = MatchRank(s, d, facts);
      if (!m.stack) {
        c.sig = nullptr;
        break;
      }
      c.version_known = c.version_known && m.version == Affects::kYes;
      c.ranks.emplace_back(d.rank, m);
    }
    if (!c.sig || c.ranks.empty()) continue;
    bool better = !best.sig || s.frames.size() > best.sig->frames.size() ||
                  (s.frames.size() == best.sig->frames.size() && c.version_known && !best.version_known);
    if (better) best = std::move(c);
  }
  return best;
}

// "ncclCommAbort > commReclaim > pthread_join": the frames of the stack
// that the signature names, outermost first, without argument lists.
std::string MatchedFrames(const Signature& s, const model::StackSample& st) {
  std::string out;
  for (auto it = st.frames.rbegin(); it != st.frames.rend(); ++it)
    if (s.NamesFrame(*it)) out += (out.empty() ? "" : " > ") + it->name.substr(0, it->name.find('('));
  return out;
}

Finding BugFinding(const model::Job& job, const Candidate& c, const JobFacts& facts) {
  const Signature& s = *c.sig;
  std::vector<Rank> ranks;
  for (const auto& [r, m] : c.ranks) ranks.push_back(r);
  Finding f;
  f.kind = Kind::kResourceDeadlock;
  f.severity = Severity::kError;
  f.hang = true;
  f.known_bug = {s.id, s.library, s.affected, s.fixed, s.url};
  const RankMatch& first = c.ranks.front().second;
  f.op = MatchedFrames(s, *first.stack);
  f.summary = RankWords(ranks) +
              (ranks.size() == 1 ? ", the only rank with a stack, is" : ", every rank with a stack, are") +
              " stuck where known bug " + s.id + " hangs (" + f.op + "): no rank is at fault";
  f.roles.push_back({"stuck in " + s.id, ranks});
  f.details.push_back(s.summary);
  std::string lib = s.library == "pytorch" ? "PyTorch"
                    : s.library == "nccl"  ? "NCCL"
                    : s.library == "rccl"  ? "RCCL"
                                           : "HCCL";
  std::string version = job.Find(ranks.front())->comm_lib_version;
  if (version.empty()) version = facts.any_version;
  if (c.version_known)
    f.details.push_back(lib + " " + version + " is in the affected range " + s.affected);
  else
    f.details.push_back("the " + lib + " version is not in the files: the bug affects " + lib + " " + s.affected +
                        "; check yours");
  for (const auto& [name, want] : s.settings)
    f.details.push_back(facts.settings.count(name) ? name + "=" + want + " is set, as the bug needs"
                                                   : "the bug needs " + name + "=" + want +
                                                         ", which the files do not show: check that it was set");
  size_t n = 0;
  for (const auto& [r, m] : c.ranks) {
    if (n++ == kEvidencePerSide) {
      f.evidence.push_back(
          {"", -1, -1,
           "... and " + std::to_string(c.ranks.size() - kEvidencePerSide) + " more ranks stuck the same way"});
      break;
    }
    std::string thread = m.stack->thread;  // a gdb header ends in ':'
    while (!thread.empty() && thread.back() == ':') thread.pop_back();
    f.evidence.push_back({m.stack->file, r, -1,
                          "stack (line " + std::to_string(m.stack->line) + ")" + (thread.empty() ? "" : " " + thread) +
                              ": " + MatchedFrames(s, *m.stack)});
  }
  f.fix_hint = "known " + lib + " bug " + s.id + " (affects " + lib + " " + s.affected + ", " +
               (s.fixed == "none" ? std::string("not fixed") : "fixed in " + s.fixed) + "): " + s.workaround + " (" +
               s.url + ")";
  return f;
}

}  // namespace

bool StacksMatchAKnownBug(const model::Job& job) { return BestCandidate(job, FactsOf(job)).sig != nullptr; }

void KnownBugCheck(const RankAnalysis& a, FindingSink* sink) {
  JobFacts facts = FactsOf(a.job);
  Candidate c = BestCandidate(a.job, facts);
  if (c.sig) sink->Add(BugFinding(a.job, c, facts));
}

}  // namespace hangdx::analyze
