// hangdx/analyze/checks/crashed_rank.h
// The crashed-rank check: a root (pg, seq) whose arrived ranks wait for ranks
// whose logs report a crash (CUDA error, abort: kCrash log events). The crash
// is the cause; the waiting ranks' timeouts are its consequence. Also a root
// whose arrived ranks crashed in it by themselves while the absent ranks left
// dumps that record nothing (broadcast_object_list whose receivers fail to
// unpickle the object, the sender's Flight Recorder off): the crash, not an
// absence nothing shows. (A crash
// nobody was seen waiting for is named by passes/unnamed_crash.h, with the
// same builder.) See checks/absent_ranks.h for which check reports what.
#pragma once

#include <vector>

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void CrashedRankCheck(const RankAnalysis& a, FindingSink* sink);

// The crashed_rank finding for `crashed` (ranks whose logs report a crash,
// ascending), with their crash lines as evidence; `in` is the (pg, seq) the
// others wait in for them, nullptr when none is known. When the crashed ranks
// are the ones that arrived at `in`, the finding says they crashed in it by
// themselves and the absent ranks recorded nothing.
Finding CrashedRankFinding(const RankAnalysis& a, const std::vector<model::Rank>& crashed, const Instance* in);

}  // namespace hangdx::analyze
