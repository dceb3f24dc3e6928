// hangdx/analyze/checks/lost_peer.h
// The lost-peer check, from logs alone: ranks whose collective (or P2P op)
// failed because the connection to a peer closed, reset or timed out
// (model::LogEvent::Kind::kPeerLost: gloo's "Connection closed by peer",
// NCCL's "Connection closed by remote peer", a RAS peer declared dead) lost
// it because that peer's process went away: the peer is a crashed_rank.
// The culprit is the peer the messages name (a global rank), else the ranks
// of the job that left no log at all: the rank that stopped logging while
// the others fail is the one that died. A rank whose file was read but gave
// no record (model::Job::LeftAFile: it logged, only nothing hangdx reads) did
// not leave "no log": when every candidate is such a rank, the one of them
// is the culprit (it stopped logging without an error), and two or more make
// the finding undecided between them, naming no culprit. With no candidate
// at all (the world unknown, every rank seen lost the peer, none names it),
// from logs without records and without a timeout, the finding is undecided
// and names no rank: the peer is a rank whose file was not given, and a
// failed collective is no healthy job. Says nothing when a (pg, seq) the
// records show explains it (checks/missing_rank.h reports that instance,
// as crashed_rank when its waiters lost their peer), when a log reports the
// crash itself (checks/crashed_rank.h, passes/unnamed_crash.h), or when
// no rank can be named.
#pragma once

#include <vector>

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

// The table's lost_peer row: at most one crashed_rank finding, by the rules
// above. Never fails.
void LostPeerCheck(const RankAnalysis& a, FindingSink* sink);

// True when a log of one of `ranks` reports a lost connection to a peer.
bool ReportsLostPeer(const model::Job& job, const std::vector<model::Rank>& ranks);

}  // namespace hangdx::analyze
