// hangdx/analyze/stacks.h
// Merges the stacks of all ranks into one prefix tree whose nodes carry the
// set of ranks that pass through them (the equivalence classes of STAT, the
// Stack Trace Analysis Tool): ranks doing the same thing fold into one branch,
// and the odd one out stands alone.
//
//   StackTree t = MergeStacks(job);
//   // t.root.children[0]: "main", ranks 0-1023; ... a leaf "all_reduce", ranks 0-1022
//
// A stack deeper than kMaxStackFrames (a runaway recursion) keeps its
// innermost kMaxStackFrames frames under a first frame that says how many
// outer frames were cut ("[976 outer frames cut]"), so it merges only with
// stacks cut by as many frames: ranks that differ beyond the cut are not
// merged as if their stacks were the same. Each cut is also a diagnostic.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::analyze {

inline constexpr size_t kMaxStackFrames = 1024;

struct StackNode {
  std::string frame;                // "name (file:line)" or "name"
  std::vector<model::Rank> ranks;   // sorted, distinct: ranks with a stack through here
  std::vector<StackNode> children;  // the larger class first, then by first rank
};

struct StackTree {
  StackNode root;  // frame "", all ranks with a stack
  // Ranks whose stack came from the frames of their last Flight Recorder
  // entry (the call site of that op) rather than from a stack dump.
  std::vector<model::Rank> from_flight_recorder;
  std::vector<model::Rank> without_stack;  // ranks with data but no stack at all
  std::vector<model::Rank> cut;            // ranks with a stack cut at kMaxStackFrames
  // What went wrong reading the inputs (the Job's diagnostics, warnings and
  // errors only), then the stacks' own (each cut stack, through one
  // model::DiagnosticSink), and the ranks whose file could not be used (rank
  // -> "file: why"): a rank missing from the tree may be missing for these
  // reasons.
  std::vector<model::Diagnostic> problems;
  std::map<model::Rank, std::string> unreadable;
};

// Builds the tree from every rank's stack samples (py-spy, gdb, faulthandler,
// tracebacks), outermost frame at the top; a rank without samples contributes
// the frames of its last Flight Recorder entry, when it has any. Each thread
// of a rank is one path. Deterministic. O(total frames x log); the tree's
// depth is at most kMaxStackFrames + 1.
StackTree MergeStacks(const model::Job& job);

}  // namespace hangdx::analyze
