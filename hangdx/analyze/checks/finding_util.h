// hangdx/analyze/checks/finding_util.h
// What the rank-level checks share when they write a finding: evidence
// records, where a rank is instead, the pg a finding is about, and the
// singular/plural words of summaries.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/analyze/rank_analysis.h"

namespace hangdx::analyze {

// Records listed per side of a finding; the rest are counted ("... and 12
// more ranks"): at 1,000 ranks one side would otherwise bury the others.
constexpr size_t kEvidencePerSide = 8;

// `one` for one item, `many` otherwise: "waits" for one rank, "wait" for several.
inline const char* Plural(size_t n, const char* one, const char* many) { return n == 1 ? one : many; }
inline const char* Verb(const std::vector<model::Rank>& ranks, const char* one, const char* many) {
  return Plural(ranks.size(), one, many);
}

// Appends the evidence of op `op` of rank r: its file (the artifact it was
// merged from, if another), rank and record id, with `note`.
void AddOpEvidence(const RankAnalysis& a, Finding* f, model::Rank r, const model::OpRecord& op,
                   const std::string& note);

// One line: where rank r is instead of the awaited op ("rank 3: last op pg
// 0 seq 4 all_reduce (completed); not blocked in any recorded collective
// since; called from train at train.py:12").
std::string WhereInstead(const RankAnalysis& a, model::Rank r);

// The first event of `d` that says its process shut down in order (c10d's
// "process group has NOT been destroyed" at interpreter shutdown, NCCL's
// "Destroy COMPLETE"), when `d` records no crash, timeout or abort; nullptr
// otherwise. A rank that others wait for and whose
// process ended left the job early: it is not blocked anywhere to py-spy.
const model::LogEvent* EndedByItself(const model::RankDump& d);

// The first frame of op's stack outside torch/distributed internals
// (innermost first), "name at file:line". The op must have frames.
std::string FrameText(const model::RankDump& d, const model::OpRecord& op);

// True when log event `e` says a wait timed out: a watchdog timeout
// (LogEvent::kTimeout), or an exception that says so (gloo's "Timed out
// waiting 4000ms for send operation").
bool IsTimeoutEvent(const model::LogEvent& e);

// True when `e` is a TCPStore client's failure to reach the store server
// ("The client socket has timed out after 6000ms while trying to connect to
// (127.0.0.1, 29632).", "TCP client failed to connect/validate to host
// ...": catalogue rows torch.socket.client_*). Event kind peer_lost, but
// no connection ever existed: the server was never up or not reachable.
bool IsStoreConnectFailure(const model::LogEvent& e);

// True when a log of one of `ranks` reports a timeout or a crash.
bool AnyTimeoutEvent(const model::Job& job, const std::vector<model::Rank>& ranks);

// True when instance `in` is known only from NCCL INFO logs' op lines,
// which are printed at enqueue, and none of its ranks logs a timeout or a
// crash: nothing shows that it has not finished (ingest/cross_rank/
// log_completion.h).
bool EnqueuedOnly(const RankAnalysis& a, const Instance& in);

// One line: where rank r's stack says it is ("rank 3's stack (pyspy_rank3.txt
// line 5): save < save_checkpoint < train_step"), its innermost frames first.
std::string StackWhere(model::Rank r, const model::StackSample& st);

// The first event of `d` that says an uncaught exception ended one of its
// threads other than the main one (LogEvent::kThreadError: "Exception in
// thread loader:"); nullptr when none. The process lived on.
const model::LogEvent* ThreadError(const model::RankDump& d);

// What rank r's dead thread and its main thread say, for a summary: "rank 1's
// thread loader raised ValueError: bad shard (its process stayed alive; its
// main thread is in wait < get < train)", the main thread only when a stack
// dump of it is given. "" when `d` records no thread error.
std::string ThreadErrorWords(model::Rank r, const model::RankDump& d);

// Sets the pg name, description and seq of `f` to those of instance `in`.
void FillPg(const RankAnalysis& a, const Instance& in, Finding* f);

}  // namespace hangdx::analyze
