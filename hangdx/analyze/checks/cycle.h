// hangdx/analyze/checks/cycle.h
// The cycle check: one finding per deadlock of the rank-level wait-for graph
// (a cyclic component left by graph reduction, analyze/rank_graph.h). A
// cycle of P2P ops (or of waits in send/recv) is a p2p_cycle; one of
// collectives in two or more pgs an order_inversion (pgs issued in different
// orders); anything else a wait_cycle. The finding lists the ranks in wait
// order (rotated so the smallest leads), a witness chain in words and the
// records of every op on the cycle. Each finding is added with its component,
// so that passes/cascades.h can find the ranks blocked behind it.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void CycleCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
