// hangdx/analyze/instances.h
// Steps 3 and 4 of the rank-level analysis (analyze/rank_analysis.h): the
// (pg, seq) instances of collectives, matched across members.
//
// BuildInstances (step 3) walks every seq some member of a group recorded and
// EvaluateInstance (step 4) judges it on its own (an earlier mismatch does not
// poison later seqs): members with an entry at that seq have arrived; members
// whose last entry in the pg is older have not reached it; a seq older than a
// member's oldest kept entry was evicted from its ring buffer and counts as
// passed; members with no dump are only suspected at the seq where the
// arrived ranks stopped. Arrived ranks are grouped by signature
// (analyze/match.h); the largest class is the reference (a tie goes to the
// signature the pg ran most often, then to the class without the lowest rank).
//
//   InstanceTable t = BuildInstances(groups, options);
//   for (const Instance& in : t.list) if (in.mismatch) ... in.classes
//
// Only problems and pending instances are kept: memory stays proportional to
// what is wrong. O(E log E) for E entries. Immutable after building.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/groups.h"

namespace hangdx::analyze {

// One (pg, seq) instance of a collective and its verdict.
struct Instance {
  int group = -1;  // index into the GroupTable
  int64_t seq = -1;
  std::vector<model::Rank> arrived, not_reached, no_dump;
  // Op indices (into the rank's dump) at this seq, per arrived rank i:
  // op_idx[op_start[i] .. op_start[i+1]). Flat: one allocation, not one per rank.
  std::vector<uint32_t> op_idx, op_start{0};
  std::span<const uint32_t> ops(size_t i) const { return {op_idx.data() + op_start[i], op_start[i + 1] - op_start[i]}; }
  // Signature classes among arrived ranks, largest (reference) first; only
  // filled when they disagree (a mismatch).
  std::vector<std::pair<std::string, std::vector<model::Rank>>> classes;
  bool mismatch = false;
  // The two largest classes are equal in size and in how often this pg ran
  // their ops before: the reference is then the side without the lowest rank,
  // a prior (rank-0-only code paths are the usual deviation), not evidence.
  bool tie = false;
  bool any_pending = false;   // some arrived op not completed
  bool all_in_flight = true;  // every arrived op pending, not retired
  bool failed = false;        // arrived ops finished although a member never came
  // The arrived index whose op stands for the instance (its kind, its
  // backend): the first rank whose record names its op kind, 0 when none
  // does (match.h, KindUnknown).
  uint32_t lead = 0;
  int64_t created_ns = 0;  // earliest creation among arrived ops
  bool problem() const { return mismatch || !not_reached.empty() || !no_dump.empty(); }
};

struct InstanceTable {
  std::vector<Instance> list;                     // by group, then seq
  std::map<std::pair<int, int64_t>, int> index;   // (group, seq) -> list
  std::vector<int64_t> max_seq, mismatched_seqs;  // per group: highest seq arrived at; seqs that disagree

  // The instance of (group, seq), or -1 when it is not kept.
  int Find(int group, int64_t seq) const {
    auto it = index.find({group, seq});
    return it == index.end() ? -1 : it->second;
  }
};

// Step 3: every instance of every group of `groups` worth keeping (a
// problem, or some arrived op still pending).
InstanceTable BuildInstances(const GroupTable& groups, const AnalyzeOptions& options);

// Step 4: the instance (group `gi`, `seq`) judged on its own; nullopt when
// no member has an entry at that seq. `counts`, when given, caches the
// group's SignatureCounts between calls (filled on the first mismatch).
std::optional<Instance> EvaluateInstance(const GroupTable& groups, int gi, int64_t seq, const AnalyzeOptions& options,
                                         std::map<std::string, int64_t>* counts = nullptr);

// Signature (match.h) -> how many collectives of group `gi` its members
// recorded with it, over their whole histories (every op, also those
// ingest did not keep). For ordering the classes of a mismatch.
std::map<std::string, int64_t> SignatureCounts(const GroupTable& groups, int gi);

}  // namespace hangdx::analyze
