// hangdx/analyze/checks/unreadable.h
// The unreadable check: a root (pg, seq) whose arrived ranks wait only for
// ranks whose dump was found but could not be read (truncated, corrupt;
// Job::unreadable). Says so, as an undecided error, rather than call those
// ranks dead. See checks/absent_ranks.h for which check reports what.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void UnreadableCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
