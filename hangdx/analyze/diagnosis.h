// hangdx/analyze/diagnosis.h
// What an analysis concludes: findings (each a kind, culprit ranks, roles,
// evidence, fix hint), per-pg and per-rank summaries, and the rank-level
// wait-for graph. Renderers in report/ only format these; they never compute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::analyze {

using model::Rank;

// Finding kinds; names are the stable strings of the JSON schema.
enum class Kind {
  kCollectiveMismatch,  // different collectives at one (pg, seq)
  kSizeMismatch,        // same collective, different sizes or dtypes
  kMissingRank,         // a live rank never arrived at the (pg, seq)
  kCrashedRank,         // a rank with no dump that the others wait for
  kStraggler,           // a rank behind, but the wait has not timed out: not a hang
  kP2pCycle,            // circular wait of P2P ops
  kP2pMismatch,         // sends and recvs that do not pair (tag, peer, size), seen without a cycle
  kWaitCycle,           // circular wait not only of P2P ops
  kStreamCycle,
  kOrderInversion,  // pgs sharing ranks, issued in different orders: a cycle across pgs
  kResourceDeadlock,
  kTaskQueueDeadlock,
  kUndecided,  // the evidence cannot decide (say what is missing)
};
const char* KindName(Kind kind);

enum class Severity { kInfo, kWarning, kError };
const char* SeverityName(Severity s);

// Where a claim comes from: a file, the rank it belongs to, and the Flight
// Recorder record id (or -1), with a short note of what it shows.
struct Evidence {
  std::string file;
  Rank rank = -1;
  int64_t record_id = -1;
  std::string note;
};

// A named set of ranks with one role in a finding ("arrived", "missing",
// "all_reduce in=[[4, 4]] Float", "cycle", ...).
struct RoleGroup {
  std::string role;
  std::vector<Rank> ranks;
};

struct Finding {
  Kind kind = Kind::kUndecided;
  Severity severity = Severity::kError;
  bool hang = true;                 // false for warnings about a job that still progresses
  std::string summary;              // one sentence
  std::string pg_name, pg_desc;     // "" when not about one pg
  int64_t seq = -1;                 // collective seq, -1 when not about one
  std::string op;                   // the reference op (majority), or the ops in a cycle
  std::vector<Rank> culprit_ranks;  // global ranks to look at first, most likely first
  bool ranks_are_pg_local = false;  // culprit_ranks are ranks inside `pg`, global ranks unknown
  std::vector<RoleGroup> roles;
  std::vector<Rank> cycle;           // cycle findings: ranks in wait order
  std::vector<Rank> blocked_behind;  // ranks stuck because of this finding
  std::vector<std::string> details;  // one line each: where each missing rank is instead, ...
  std::vector<Evidence> evidence;
  std::string fix_hint;
  // An undecided finding between named alternatives (a tie): every rank one
  // of them would blame, sorted, and what evidence would tell them apart.
  std::vector<Rank> candidates;
  std::string would_decide;
  // The library bug a finding names (checks/known_bug.h); `id` "" when none.
  struct KnownBug {
    std::string id, library, affected, fixed, url;
  } known_bug;
};

// Per process group: members and where it is stuck.
struct PgSummary {
  std::string name, desc;
  std::vector<Rank> ranks;
  bool ranks_inferred = false;  // not recorded in the dumps: inferred
  int64_t stuck_seq = -1;       // first seq not completed on every member, -1 none
  std::string stuck_op;
  int64_t max_seq = -1;
  int64_t mismatched_seqs = 0;  // seqs whose members disagree
};

// Per rank: what it last finished and where it is now.
struct RankSummary {
  Rank rank = -1;
  std::string file;            // "" when there is no dump
  std::string state;           // "blocked", "idle", "no dump", "snapshot"
  std::string last_completed;  // "pg 0 seq 12 all_reduce", "" if none
  std::string current;         // where it is blocked / last op
  int64_t last_activity_ns = 0;
};

struct RankEdge {
  Rank from = -1, to = -1;
  std::string label;  // "pg 0 seq 5 all_reduce"
  bool in_cycle = false;
};

struct Diagnosis {
  bool hang = false;              // some finding of severity error
  std::string verdict;            // one sentence, the first line of the text report
  std::vector<Finding> findings;  // most important first
  std::vector<PgSummary> pgs;
  std::vector<RankSummary> ranks;
  std::vector<RankEdge> edges;  // rank-level wait-for graph
  std::vector<Rank> ranks_without_dump;
  int64_t world_size = -1;
  bool world_size_inferred = true;
  std::vector<model::Diagnostic> diagnostics;
  std::vector<std::string> files;
  model::Job::InputStats inputs;
  std::map<Rank, std::string> unreadable;  // rank -> its file that could not be used
};

// The highest rank that `d` lists anywhere (per-rank summaries, pg members,
// wait-for edges, ranks without data, unreadable files, and every rank list
// of a finding and its evidence), or -1 when it lists none. Culprits that are
// pg-local (Finding::ranks_are_pg_local) count too: they are listed as well.
Rank HighestRankListed(const Diagnosis& d);

}  // namespace hangdx::analyze
