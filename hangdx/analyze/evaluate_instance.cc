// Step 4 of the rank-level analysis: one (pg, seq) judged on its own
// (declared in analyze/instances.h).
#include <algorithm>

#include "hangdx/analyze/instances.h"
#include "hangdx/analyze/match.h"
#include "hangdx/analyze/world.h"

namespace hangdx::analyze {

using model::OpRecord;
using model::Rank;
using model::RankDump;

namespace {

// True when arrived ranks i and j recorded the same ops at this seq as far
// as matching is concerned (op names, and the sizes and dtypes compared for
// that op). Fast: compares interned values, builds no strings.
bool SameOps(const Group& g, const Instance& in, size_t i, size_t j) {
  auto a = in.ops(i), b = in.ops(j);
  if (a.size() != b.size()) return false;
  const RankDump* da = g.DumpOf(in.arrived[i]);
  const RankDump* db = g.DumpOf(in.arrived[j]);
  for (size_t k = 0; k < a.size(); ++k) {
    const OpRecord& x = da->ops[a[k]];
    const OpRecord& y = db->ops[b[k]];
    if (KindUnknown(x) || KindUnknown(y)) continue;  // reached this seq, calling what is not known
    // Common case first: identical records (interned values compare by
    // address within a dump, by value across dumps).
    if (x.op == y.op && x.input_sizes == y.input_sizes && x.output_sizes == y.output_sizes &&
        x.input_dtypes == y.input_dtypes && x.output_dtypes == y.output_dtypes && x.p2p_peer_local == y.p2p_peer_local)
      continue;
    MatchState ms = MatchOps(x, y);
    if (ms != MatchState::kFullyMatched && ms != MatchState::kStateMismatch && ms != MatchState::kUndecided)
      return false;
    if (ms == MatchState::kUndecided && Signature(x) != Signature(y)) return false;
  }
  return true;
}

// Orders signature classes: larger first; on a tie, the signature seen
// more often in this pg's history (`counts`: all seqs, less this one's ops);
// then the class without the lowest rank (rank-0-only code paths are the
// usual deviation) is the reference.
void OrderClasses(Instance* in, const Group& g, const std::map<std::string, int64_t>& counts) {
  std::map<std::string, int64_t> freq = counts;
  for (size_t i = 0; i < in->arrived.size(); ++i)
    for (uint32_t idx : in->ops(i)) --freq[Signature(g.DumpOf(in->arrived[i])->ops[idx])];
  auto first_sig = [](const std::string& s) { return s.substr(0, s.find(" + ")); };
  std::stable_sort(in->classes.begin(), in->classes.end(), [&](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
    int64_t fa = freq[first_sig(a.first)], fb = freq[first_sig(b.first)];
    if (fa != fb) return fa > fb;
    return a.second.front() > b.second.front();
  });
  const auto& top = in->classes[0];
  const auto& next = in->classes[1];
  in->tie = top.second.size() == next.second.size() && freq[first_sig(top.first)] == freq[first_sig(next.first)];
}

// Folds one arrived op into the instance's completion and timing flags.
void NoteArrivedOp(const OpRecord& op, Instance* in) {
  if (!op.completed) in->any_pending = true;
  if (op.completed || op.retired) in->all_in_flight = false;
  if (KindUnknown(op)) return;          // no backend, no times: nothing more to say
  if (op.completed) in->failed = true;  // meaningful only if the instance is a problem
  if (op.time_created_ns > 0 && (in->created_ns == 0 || op.time_created_ns < in->created_ns))
    in->created_ns = op.time_created_ns;
  // NCCL-style dumps are written on timeout and update state themselves: a
  // pending op there is no evidence of progress. gloo retires (and counts as
  // completed) an op that timed out, so a pending, unretired gloo op is
  // still in flight.
  if (op.backend != "gloo") in->all_in_flight = false;
}

// True when every op of arrived rank i at this seq names its kind.
bool KindsKnown(const Group& g, const Instance& in, size_t i) {
  const RankDump* d = g.DumpOf(in.arrived[i]);
  for (uint32_t idx : in.ops(i))
    if (KindUnknown(d->ops[idx])) return false;
  return true;
}

// Sorts every member into arrived, not reached, no dump (or passed: none of
// them); sets in->lead. Returns false when the arrived ranks' ops disagree
// somewhere.
bool SortMembers(const Group& g, Instance* in) {
  bool same = true;  // every arrived rank's ops agree with the lead's
  bool lead_known = false;
  for (size_t m = 0; m < g.members.size(); ++m) {
    Rank r = g.members[m];
    const auto& list = g.coll[m];
    auto lo = std::lower_bound(list.begin(), list.end(), std::make_pair(in->seq, uint32_t{0}));
    if (lo != list.end() && lo->first == in->seq) {
      for (auto it = lo; it != list.end() && it->first == in->seq; ++it) {
        in->op_idx.push_back(it->second);
        const OpRecord& op = g.dump[m]->ops[it->second];
        NoteArrivedOp(op, in);
        // A live wait state that has lasted past its stall threshold
        // (hangdx watch writes one per rank) is the timeout evidence a
        // dump taken while the job still runs lacks.
        if (!op.completed && g.dump[m]->wait && g.dump[m]->wait->Stalled()) in->all_in_flight = false;
      }
      in->arrived.push_back(r);
      in->op_start.push_back(static_cast<uint32_t>(in->op_idx.size()));
      size_t i = in->arrived.size() - 1;
      if (!lead_known && KindsKnown(g, *in, i)) {
        // A rank known by its progress alone agrees with anyone: the
        // comparisons are against the first rank that says what it called
        // (the earlier ones' unknown records agreed with it too).
        in->lead = static_cast<uint32_t>(i);
        lead_known = true;
      } else if (same && i > 0) {
        same = SameOps(g, *in, in->lead, i);
      }
    } else if (!g.dump[m] || RecordsNoCollective(*g.dump[m])) {
      in->no_dump.push_back(r);
    } else if (list.empty() || list.back().first < in->seq) {
      // Reached nothing at or after this seq. A ring buffer that dropped
      // its older entries still shows later ones, so this is a real "not yet".
      in->not_reached.push_back(r);
    }
    // else: the seq is below this rank's oldest kept entry (evicted) or a
    // gap inside its history: it got past it.
  }
  return same;
}

// True when some member finished its op at this seq and then recorded a
// later collective of the pg: the collective completed, which needs every
// member's part, so an arrived rank whose record of it is still pending
// (not yet retired: a Flight Recorder dump written from an exception handler
// right after it) is not blocked there. Such a rank is where its next op
// would be: absent from the later seq, not "in flight" at this one.
bool FinishedAndPassed(const Group& g, const Instance& in) {
  for (size_t i = 0; i < in.arrived.size(); ++i) {
    const auto& list = g.coll[g.MemberIndex(in.arrived[i])];
    if (list.empty() || list.back().first <= in.seq) continue;
    bool done = true;
    for (uint32_t idx : in.ops(i)) done = done && g.DumpOf(in.arrived[i])->ops[idx].completed;
    if (done) return true;
  }
  return false;
}

}  // namespace

std::map<std::string, int64_t> SignatureCounts(const GroupTable& groups, int gi) {
  const Group& g = groups[gi];
  std::map<std::string, int64_t> counts;
  for (size_t m = 0; m < g.members.size(); ++m) {
    const RankDump* d = g.dump[m];
    if (!d || d->rank != g.members[m]) continue;
    const model::OpHistory& h = groups.HistoryOf(*d);
    // The pg under which this dump records the group (collectives of other
    // pgs, or of a pg whose members exclude it, are not the group's).
    std::vector<int> pg_of(h.pgs().size(), 0);
    for (size_t p = 0; p < h.pgs().size(); ++p) pg_of[p] = groups.GroupOf(*d, h.pgs()[p].name) == gi;
    std::vector<int64_t> per_variant(h.variants().size(), 0);
    h.ForEach([&](const model::HistoryItem& c) { per_variant[c.variant] += pg_of[c.pg]; });
    for (size_t v = 0; v < per_variant.size(); ++v)
      if (per_variant[v]) counts[Signature(h.variants()[v])] += per_variant[v];
  }
  return counts;
}

std::optional<Instance> EvaluateInstance(const GroupTable& groups, int gi, int64_t seq, const AnalyzeOptions& options,
                                         std::map<std::string, int64_t>* counts) {
  const Group& g = groups[gi];
  Instance in;
  in.group = gi;
  in.seq = seq;
  bool same = SortMembers(g, &in);
  if (options.assume_timed_out) in.all_in_flight = false;
  if (in.arrived.empty()) return std::nullopt;
  // A member without a dump took part in every seq that some arrived rank
  // got past (the collective completed); it is a suspect only where the
  // arrived ranks stopped.
  if (!in.no_dump.empty()) {
    for (Rank r : in.arrived) {
      const auto& list = g.coll[g.MemberIndex(r)];
      if (!list.empty() && list.back().first > seq) {
        in.no_dump.clear();
        break;
      }
    }
  }
  if (!same) {
    // The slow path, for the rare seq where ranks disagree: name each
    // distinct signature.
    std::map<std::string, std::vector<Rank>> classes;
    for (size_t i = 0; i < in.arrived.size(); ++i) {
      if (!KindsKnown(g, in, i)) continue;  // no side: what it called is not known
      std::string sig;
      for (uint32_t idx : in.ops(i)) sig += (sig.empty() ? "" : " + ") + Signature(g.DumpOf(in.arrived[i])->ops[idx]);
      classes[sig].push_back(in.arrived[i]);
    }
    for (auto& [sig, ranks] : classes) in.classes.emplace_back(sig, ranks);
  }
  in.mismatch = in.classes.size() > 1;
  if (in.mismatch) {
    std::map<std::string, int64_t> own;
    if (!counts) counts = &own;
    if (counts->empty()) *counts = SignatureCounts(groups, gi);
    OrderClasses(&in, g, *counts);
  }
  if (!in.problem()) in.failed = false;
  if (in.any_pending && !in.problem() && FinishedAndPassed(g, in)) in.any_pending = false;
  return in;
}

}  // namespace hangdx::analyze
