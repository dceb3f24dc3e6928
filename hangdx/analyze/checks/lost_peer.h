// hangdx/analyze/checks/lost_peer.h
// The lost-peer check, from logs alone: ranks whose collective (or P2P op)
// failed because the connection to a peer closed, reset or timed out
// (model::LogEvent::Kind::kPeerLost: gloo's "Connection closed by peer",
// NCCL's "Connection closed by remote peer", a RAS peer declared dead) lost
// it because that peer's process went away: the peer is a crashed_rank.
// The culprit is the peer the messages name (a global rank); else a rank
// that exited 0 while they still talked to it (torchrun's failure summary
// leaves it out: LogEvent::ExitRole::kEndedInOrder); else a rank whose given
// file is empty (no log at all); else the one rank that can be the peer:
// the only rank without records, whether its file held nothing hangdx reads
// (model::Job::LeftAFile: it stopped logging without an error) or no file of
// it was given (the connection closed, so the peer's process ended, and no
// other rank can be it). Two or more such ranks make the finding undecided
// between them, naming no culprit: a rank whose file was not given is a
// candidate, not proven dead (the fresh-user tester's "2 of 4 ranks' files":
// hangdx had called the two it was not shown dead). With no candidate at
// all (the world unknown, every rank seen lost the peer, none names it),
// from logs without records and without a timeout, the finding is undecided
// and names no rank: the peer is a rank whose file was not given, and a
// failed collective is no healthy job. Says nothing otherwise when no rank
// is left to be the peer, when a (pg, seq) the
// records show explains it (checks/missing_rank.h reports that instance, as
// crashed_rank when its waiters lost their peer), or when a log reports the
// crash itself (checks/crashed_rank.h, passes/unnamed_crash.h).
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
