// hangdx/analyze/checks/stalled_pgs.h
// Pgs whose first pending seq every member reached and agrees on, yet did not
// finish (and is not deadlocked), shared by two checks: when a pg
// description names different pgs on different ranks, new_group was called in
// different orders and checks/pg_creation_order.h reports it; every other such
// pg is a stall, checks/stall.h. Both call these functions (the stall check
// skips the instances the splits explain) rather than read each other's
// findings.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

// True when some member ended instance `in` and nothing says that it ended
// it by failing: its op there is completed (gloo: retired) and its rank
// logged no timeout, lost peer, abort or crash. A collective needs every
// member, so then every member arrived: members still showing it pending
// were dumped a moment before it finished on them (dumps are never taken at
// quite the same time; gloo also records completion asynchronously). Such
// an instance is no stall and names no culprit.
bool EndedByAMember(const RankAnalysis& a, const Instance& in);

// Group -> its first kept instance that is no problem, still pending, not
// ended by a member (EndedByAMember) and not deadlocked, by group.
std::map<int, int> FirstStalledInstances(const RankAnalysis& a);

// One pg description (set by the user, so one logical group) that is a
// different pg name on different ranks, each rank knowing it under one name.
struct CreationOrderSplit {
  std::string desc;
  std::vector<int> instances;  // the first stalled instance of each of its pgs, by group
};

// Every such split among the first stalled instances, by description.
std::vector<CreationOrderSplit> CreationOrderSplits(const RankAnalysis& a);

}  // namespace hangdx::analyze
