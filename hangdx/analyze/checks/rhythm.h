// hangdx/analyze/checks/rhythm.h
// The job's own rhythm, for telling a straggler from a stall: how long the
// ranks that arrived at a (pg, seq) have waited there, against the usual
// time between two collectives of that pg (the median gap between the
// creation times of consecutive collectives in the Flight Recorder records
// of the arrived ranks). A wait many times the usual step is a hang even
// when no timeout has fired yet; a wait within the rhythm is a straggler.
//
// The wait is a lower bound: "now" is the latest time any record of the job
// carries (the dumps do not say when they were written), or the longest
// wait an arrived rank's log reports (LogEvent::waited_ms), so the rhythm
// can only make a wait a hang, never make a timed-out one a straggler.
#pragma once

#include <cstdint>
#include <string>

#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

// A wait this many times the usual gap between collectives is a stall.
inline constexpr int64_t kStallFactor = 10;

// The rhythm of one (pg, seq) and the wait there, as RhythmOf measures it.
struct Rhythm {
  int64_t step_ns = 0;    // median gap between consecutive collectives of the pg; 0 unknown
  int64_t waited_ns = 0;  // how long the arrived ranks have waited at least; 0 unknown
  int64_t gaps = 0;       // how many gaps the median is of
  // True when the wait is known to be kStallFactor steps or more.
  bool Overdue() const { return step_ns > 0 && waited_ns >= kStallFactor * step_ns; }
  // "waited at least 42.0 s, 35 times the usual 1.2 s between collectives"
  // when Overdue(), else "" (a wait within the rhythm, or unknown, is no
  // reason to say more).
  std::string Words() const;
};

// The rhythm of instance `in`'s pg and the wait at `in`, from the arrived
// ranks' records before `in.seq` (FR creation times, ns). Needs three gaps
// at least (fewer: step_ns 0). Never fails.
Rhythm RhythmOf(const RankAnalysis& a, const Instance& in);

}  // namespace hangdx::analyze
