#include "hangdx/analyze/checks/collective_mismatch.h"

#include <algorithm>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/match.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::OpRecord;
using model::Rank;

namespace {

size_t ArrivedIndex(const Instance& in, Rank r) {
  return std::find(in.arrived.begin(), in.arrived.end(), r) - in.arrived.begin();
}

// Which rule separates the reference from the other classes.
struct Difference {
  bool type_differs = false;  // op names, or how many ops a coalesced group has
  bool dtype_only = true;     // only dtypes differ
  bool all_to_all_only = false;
};

Difference DifferenceOf(const RankAnalysis& a, const Instance& in) {
  Difference d;
  size_t ref_i = ArrivedIndex(in, in.classes.front().second.front());
  const OpRecord& ref_op = a.OpAt(in, ref_i);
  for (size_t c = 1; c < in.classes.size(); ++c) {
    size_t i = ArrivedIndex(in, in.classes[c].second.front());
    MatchState ms = MatchOps(ref_op, a.OpAt(in, i));
    if (ms == MatchState::kTypeMismatch || in.ops(i).size() != in.ops(ref_i).size()) d.type_differs = true;
    if (ms != MatchState::kDtypeMismatch) d.dtype_only = false;
  }
  d.all_to_all_only = IsAllToAll(ref_op.op) && !d.type_differs;
  return d;
}

std::string Summary(const Group& g, const Instance& in, const Difference& d) {
  if (d.all_to_all_only)
    return "all_to_all at " + g.Label() + " seq " + std::to_string(in.seq) +
           " has rank-dependent sizes, which all_to_all allows: cannot decide";
  std::string what = d.type_differs ? "call different collectives"
                     : d.dtype_only ? "disagree on dtype"
                                    : "disagree on sizes";
  const auto& ref = in.classes.front();
  std::string s = "ranks of " + g.Label() + " " + what + " at seq " + std::to_string(in.seq) + ": " +
                  RankWords(ref.second) + " " + Plural(ref.second.size(), "calls ", "call ") + ref.first;
  for (size_t c = 1; c < in.classes.size(); ++c)
    s += "; " + RankWords(in.classes[c].second) + " " + Plural(in.classes[c].second.size(), "calls ", "call ") +
         in.classes[c].first;
  return s;
}

// Evidence per side, the deviating sides first, a few ranks of each: at
// 1,000 ranks the reference side would otherwise bury the culprit's record.
void AddSideEvidence(const RankAnalysis& a, const Instance& in, Finding* f) {
  for (size_t c = 1; c <= in.classes.size(); ++c) {
    const auto& ranks = in.classes[c % in.classes.size()].second;
    for (size_t k = 0; k < ranks.size() && k < kEvidencePerSide; ++k) {
      size_t i = ArrivedIndex(in, ranks[k]);
      const model::RankDump* d = a.DumpOf(in, in.arrived[i]);
      for (uint32_t idx : in.ops(i)) {
        const OpRecord& op = d->ops[idx];
        std::string note = Signature(op);
        if (!op.frames->empty()) note += " from " + FrameText(*d, op);
        AddOpEvidence(a, f, in.arrived[i], op, note);
      }
    }
    if (ranks.size() > kEvidencePerSide)
      f->evidence.push_back(
          {"", -1, -1,
           "... and " + std::to_string(ranks.size() - kEvidencePerSide) + " more ranks with the same record"});
  }
}

// A mismatch that TORCH_DISTRIBUTED_DEBUG=DETAIL caught (kMismatch events
// at this (pg, seq)): the wrapper compared fingerprints before the op ran
// and raised on the ranks that logged it, so the job failed, not hung.
void DetectedByPyTorch(const RankAnalysis& a, const Instance& in, Finding* f) {
  const Group& g = a.groups[in.group];
  std::vector<Rank> raised;
  std::vector<Evidence> lines;
  for (const auto& d : a.job.dumps) {
    if (g.MemberIndex(d.rank) < 0) continue;
    for (const auto& e : d.events) {
      if (e.kind != model::LogEvent::Kind::kMismatch || e.seq != in.seq || e.pg != g.name) continue;
      if (raised.empty() || raised.back() != d.rank) raised.push_back(d.rank);
      if (lines.size() < kEvidencePerSide)
        lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
  }
  if (raised.empty()) return;
  f->hang = false;
  f->roles.push_back({"raised the mismatch error", raised});
  f->details.push_back(
      "PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL check compared the ranks' fingerprints before the "
      "collective ran and raised on " +
      RankWords(raised) + ": the job failed fast instead of hanging");
  f->evidence.insert(f->evidence.begin(), lines.begin(), lines.end());
}

// A tie while some members of the pg are not in the files (two logs of a
// 4-rank communicator that disagree): the members not seen decide which side
// is the reference, so the finding names both sides instead of picking one.
// With every member seen there is no more evidence to wait for, and the
// prior (the side without the lowest rank) stays, said as such.
void UndecidedTie(const RankAnalysis& a, const Instance& in, Finding* f) {
  const Group& g = a.groups[in.group];
  std::vector<Rank> unseen;
  for (Rank r : g.members)
    if (std::find(in.arrived.begin(), in.arrived.end(), r) == in.arrived.end()) unseen.push_back(r);
  if (!in.tie || unseen.empty()) return;
  std::vector<Rank> candidates;
  for (const auto& [sig, ranks] : in.classes)
    if (ranks.size() == in.classes.front().second.size())
      candidates.insert(candidates.end(), ranks.begin(), ranks.end());
  std::sort(candidates.begin(), candidates.end());
  f->kind = Kind::kUndecided;
  f->culprit_ranks = candidates;
  f->candidates = candidates;
  f->summary += "; the sides are equal and " + RankWords(unseen) + " of " + g.Label() + " " +
                Verb(unseen, "is", "are") + " not in the files: cannot tell which side deviated";
  f->would_decide = "the dump or log of " + RankWords(unseen) +
                    " at this seq: the side the other members are on is the reference, the other side deviated";
  f->details.erase(std::remove_if(f->details.begin(), f->details.end(),
                                  [](const std::string& d) { return d.rfind("the two sides are equal", 0) == 0; }),
                   f->details.end());
}

Finding MismatchFinding(const RankAnalysis& a, const Instance& in) {
  const Group& g = a.groups[in.group];
  Difference diff = DifferenceOf(a, in);
  Finding f;
  FillPg(a, in, &f);
  f.kind = diff.type_differs      ? Kind::kCollectiveMismatch
           : diff.all_to_all_only ? Kind::kUndecided
                                  : Kind::kSizeMismatch;
  f.op = a.OpAt(in, ArrivedIndex(in, in.classes.front().second.front())).op;
  for (size_t c = 1; c < in.classes.size(); ++c)
    f.culprit_ranks.insert(f.culprit_ranks.end(), in.classes[c].second.begin(), in.classes[c].second.end());
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  for (const auto& [sig, ranks] : in.classes) f.roles.push_back({sig, ranks});
  if (!in.not_reached.empty()) f.roles.push_back({"not arrived", in.not_reached});
  if (!in.no_dump.empty()) f.roles.push_back({"no dump", in.no_dump});
  f.hang = !diff.all_to_all_only;
  f.severity = diff.all_to_all_only ? Severity::kWarning : Severity::kError;
  f.summary = Summary(g, in, diff);
  AddSideEvidence(a, in, &f);
  if (in.classes.size() == 2 && in.classes[0].second.size() == in.classes[1].second.size())
    f.details.push_back(
        "the two sides are equal in size: the reference is the op this pg ran "
        "most often before, then the side without the lowest rank");
  for (Rank r : f.culprit_ranks) f.details.push_back(WhereInstead(a, r));
  UndecidedTie(a, in, &f);
  f.fix_hint = diff.type_differs
                   ? "make every rank of the pg issue the same collectives in the same order: look for a "
                     "rank-dependent branch, uneven data (DistributedSampler, drop_last), or a collective "
                     "that only some ranks reach (checkpointing, logging, clip_grad_norm_)"
                   : "make the tensors of this collective the same shape and dtype on every rank";
  if (in.failed && a.LeadOp(in).backend == "gloo")
    f.details.push_back("gloo has ended the op (timed out or failed) on the ranks that called it");
  DetectedByPyTorch(a, in, &f);
  return f;
}

}  // namespace

void CollectiveMismatchCheck(const RankAnalysis& a, FindingSink* sink) {
  for (int i = 0; i < static_cast<int>(a.instances.list.size()); ++i)
    if (a.IsRoot(i) && a.instances.list[i].mismatch) sink->Add(MismatchFinding(a, a.instances.list[i]));
}

}  // namespace hangdx::analyze
