// hangdx/ingest/formats/messages/attribution.h
// Which rank a recognized message belongs to, and what the ranks it names
// count in. A message rarely says who printed it: the launcher prefix may
// (logs::LinePrefix), c10d's own pg prefix may (MessageMatch::c10d_prefix),
// the text may name its subject (`rank` capture), the file name may; and a
// report may name other ranks (`ranks`, `ready_ranks`, `peer`), global or
// inside a pg (the row's rank_scope). Attribute() applies one precedence to
// all of them and never invents a rank: what cannot be told stays -1.
//
//   FileFacts facts;
//   for (logs::Line l; reader.Next(&l);) facts.Observe(l);
//   facts.Finish(in.rank_hint);
//   Attribution who = Attribute(match, facts);
//   if (who.rank >= 0) ...
//
// Precedence of the rank a message belongs to (Attribution::rank):
//   1. the `rank` capture, when the row's rank_scope makes it global
//      (global; pg in the default pg; group in a TP-only file): the message
//      is about that process ("Worker proc VllmWorker-1 died", "store based
//      barrier on rank 5");
//   2. a launcher prefix naming a global rank (`[rank3]:`, Open MPI
//      `[1,3]<stderr>:`, slurm `3: `, vLLM `rank=3`, MPICH `[3] ` in a file
//      whose layout says so, `[RANK 3]`, `[rank:3]:`);
//   2b. torchrun's `[default2]:` (a local rank) when the file's failure
//      summary maps that local rank to a global one ("rank : 6 (local_rank:
//      2)");
//   3. c10d's pg prefix when its pg is the default pg (`[PG ID 0 PG GUID
//      0(default_pg) Rank 3]`, a bare `[Rank 3]`): another pg's Rank is the
//      rank inside that pg (Attribution::pg_rank), never a global rank;
//   3b. the global rank vLLM's "rank R in world size W is assigned as DP
//      rank .." line gave the process of the line's tag pid (any line of
//      that process, whatever its DP / PP / TP tags);
//   4. the `reporter` capture, or the `pg_rank` capture in the default pg;
//   5. a TP index of a serving framework's prefix (`(VllmWorker TP1 ..)`,
//      `[ts TP1]`) when the file shows TP indices only (no DP, no PP):
//      TP-only serving runs one TP group over the whole world;
//   6. rank 0 for a line without any rank prefix in a combined log whose
//      prefixed lines name exactly ranks 1..K (the launcher's own process
//      writes unprefixed);
//   7. the row's `printer`: the one rank its producer prints it on
//      (Horovod's coordinator, rank 0);
//   8. the file's rank hint (its name, or --rank), unless the file's
//      prefixes name two or more ranks (a combined log: the name's number
//      is not one rank's);
//   9. the global rank torchrun's failure summary gives the process the
//      message names by `pid` ("exitcode  : -15 (pid: 5792)" under "rank
//      : 0 (local_rank: 0)"): the agent's "Sending process 5792 closing
//      signal SIGTERM" is about that worker, whoever printed it;
//   else -1. A crash or exit the row says is another process's (`subject
//   captured`) and that names no rank of it is -1 whatever the printer's
//   prefix or the file name say (a driver's Ray ActorDiedError). A line
//   with no prefix that is indented (the second line of a multi-line
//   message: c10d's desync report) carries the prefixes of the line it
//   continues (FileFacts::Observe does that).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hangdx/ingest/logs/line_util.h"
#include "hangdx/ingest/messages/matcher.h"

namespace hangdx::ingest::messages_format {

// Facts of a whole file that decide how one line's prefixes are read.
// Observe every line in order, then Finish once.
class FileFacts {
 public:
  // Notes `line`'s prefixes. An indented line without any prefix takes
  // the prefixes of the line before it (returned by Tags()).
  void Observe(const logs::Line& line);
  // The prefixes the last observed line counts as having.
  const logs::LinePrefix& Tags() const { return tags_; }
  // Ends the file; `rank_hint` is the rank its name says (-1 none).
  void Finish(int64_t rank_hint);

  bool tp_only() const { return tp_only_; }                // TP indices, never PP, no DP index but 0
  bool implicit_rank0() const { return implicit_rank0_; }  // prefixed ranks are exactly 1..K
  int64_t rank_hint() const { return rank_hint_; }         // -1 when none or a combined log
  const std::set<int64_t>& prefix_ranks() const { return prefix_ranks_; }
  // The global rank vLLM's "rank R in world size W is assigned as DP rank
  // .." line (vllm/distributed/parallel_state.py, initialize_model_parallel)
  // gave the process of tag pid `pid`, -1 when none did.
  int64_t AssignedRank(int64_t pid) const;
  // The global rank torchrun's failure summary gives local rank
  // `local_rank` of this file's agent ("rank : 2 (local_rank: 2)"), -1 none
  // or when two summaries disagree.
  int64_t GlobalOfLocal(int64_t local_rank) const;
  // The global rank torchrun's failure summary gives worker process `pid`
  // (its "exitcode : C (pid: P)" line under the entry's "rank : R
  // (local_rank: L)"), -1 none or when two summaries disagree.
  int64_t GlobalOfPid(int64_t pid) const;
  // The local ranks of torchrun's `[defaultL]:` prefixes in the file (capped).
  const std::set<int64_t>& prefix_local_ranks() const { return prefix_local_ranks_; }

 private:
  void NoteAssignment(const logs::Line& l);
  void NoteLocalRank(const logs::Line& l);

  logs::LinePrefix tags_;
  std::set<int64_t> prefix_ranks_;                            // global ranks that prefixes name (capped)
  bool seen_tp_ = false, seen_dp_ = false, seen_pp_ = false;  // seen_dp_: a DP index above 0
  int64_t untagged_lines_ = 0;                                // non-empty lines with no rank-naming prefix
  bool tp_only_ = false, implicit_rank0_ = false;
  int64_t rank_hint_ = -1;
  std::set<int64_t> nccl_pids_;                 // pids of NCCL "host:pid:tid [dev]" prefixes (at most 8)
  std::map<int64_t, int64_t> local_to_global_;  // torchrun summary: local rank -> global rank, -1 conflicting
  std::map<int64_t, int64_t> pid_to_global_;    // torchrun summary: worker pid -> global rank, -1 conflicting
  int64_t summary_rank_ = -1;                   // the global rank of the summary entry being read, -1 none
  std::set<int64_t> prefix_local_ranks_;        // local ranks of `[defaultL]:` prefixes (capped)
  std::map<int64_t, int64_t> assigned_;         // process tag pid -> vLLM's assigned global rank (capped)
};

// Who a message belongs to and what the ranks it names are.
struct Attribution {
  int64_t rank = -1;        // the global rank it belongs to, -1 unknown
  const char* how = "";     // which rule of the precedence gave `rank` ("launcher prefix", ...)
  std::string pg;           // its pg: c10d prefix's PG GUID (or PG ID), else the `pg` capture; "" none
  std::string pg_desc;      // "default_pg", ...
  bool pg_default = false;  // `pg` is the default pg (or a c10d prefix without a PG: 1.x's)
  int64_t pg_id = -1;       // c10d's numeric PG ID (keys RankDump::pg_status), -1 none
  int64_t pg_rank = -1;     // the printing rank inside `pg`, -1 unknown
  // The ranks the message names (culprits / missing, arrived, the peer)
  // and whether they are global; pg-local ones are ranks inside `pg`.
  std::vector<int64_t> ranks, ready_ranks;
  int64_t peer = -1;
  bool ranks_pg_local = false;
  // False when the named ranks count nothing hangdx can map (torchelastic
  // agents' ranks, a serving group's index outside a TP-only file): the
  // message is kept without them.
  bool ranks_usable = true;
};

// Applies the precedence above to `m` (its row, captures, prefixes).
Attribution Attribute(const messages::MessageMatch& m, const FileFacts& facts);

// The pg of each rank's last timeout in a file, for the rows that follow a
// timeout and name no pg (Row::pg_from_timeout: c10d's desync report).
// Feed it every message in file order.
class TimeoutPgs {
 public:
  // Gives `*a` (of `m`) the pg of its rank's last timeout when its row
  // says so, and remembers the pg of a timeout.
  void Apply(const messages::MessageMatch& m, Attribution* a);

 private:
  std::map<int64_t, Attribution> last_;  // by rank
};

}  // namespace hangdx::ingest::messages_format
