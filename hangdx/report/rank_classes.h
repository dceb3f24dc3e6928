// hangdx/report/rank_classes.h
// Rank classes: the ranks of a Diagnosis grouped so that a report of
// 100,000 ranks fits a screen and its JSON stays small. Two ranks are in one
// class when their summaries say the same (state, current, last completed
// op, file) and the ranks they wait for (the wait-for edges) have the same
// summaries, as a set. So ranks whose states differ are never merged, nor
// ranks in one state waiting on ranks in different states; a rank that
// waits on nobody is in a class with the others in its state.
//
//   RankClasses c = ClassifyRanks(d);
//   c.of[i]                  // the class of d.ranks[i]
//   c.classes[c.of[i]].count // how many ranks share it
//
// Deterministic: classes are numbered by their lowest rank. O(R log R + E)
// for R ranks and E edges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/analyze/diagnosis.h"

namespace hangdx::report {

struct RankClass {
  // The summary its ranks share (analyze::RankSummary's fields).
  std::string state, current, last_completed, file;
  // The classes of the ranks its ranks wait for (sorted, unique; a rank
  // with no summary of its own is left out).
  std::vector<int> waits_for;
  int64_t count = 0;           // ranks in it
  std::vector<int64_t> ranks;  // its ranks, ascending
};

struct RankClasses {
  std::vector<RankClass> classes;  // by lowest rank
  std::vector<int> of;             // per entry of Diagnosis::ranks, its class
};

// Groups d.ranks into classes (above). Never fails.
RankClasses ClassifyRanks(const analyze::Diagnosis& d);

}  // namespace hangdx::report
