#include "hangdx/ingest/formats/messages/attribution.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>

namespace hangdx::ingest::messages_format {
namespace {

using messages::MessageMatch;
using messages::RankScope;

constexpr size_t kMaxPrefixRanks = 1 << 16;  // a hostile file must not grow the set without end

bool HasRankTag(const logs::LinePrefix& p) { return p.rank >= 0 || p.tp >= 0 || p.dp >= 0 || p.pp >= 0; }

// c10d's pg name of a prefix: the PG GUID, else the PG ID (as torch_log and
// Flight Recorder name pgs).
std::string PgName(const messages::C10dPrefix& p) { return !p.pg_guid.empty() ? p.pg_guid : p.pg_id; }

int64_t ToInt(const std::string& s) {
  int64_t v = -1;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() ? v : -1;
}

// The message's pg: c10d's prefix, else the `pg` capture.
void FillPg(const MessageMatch& m, Attribution* a) {
  const messages::C10dPrefix& p = m.c10d_prefix;
  if (p.found) {
    a->pg = PgName(p);
    a->pg_desc = p.pg_desc;
    // A prefix without a PG ("[Rank 3]", PyTorch 1.x-2.1) or PG 0 / the
    // default_pg desc: the default pg, whose ranks are global.
    a->pg_default = a->pg.empty() || a->pg == "0" || p.pg_desc == "default_pg";
    if (a->pg.empty()) a->pg = "0";
    if (a->pg_desc.empty() && a->pg == "0") a->pg_desc = "default_pg";
    a->pg_id = p.pg_id.empty() ? 0 : ToInt(p.pg_id);
    a->pg_rank = p.pg_rank;
  } else if (!m.fields.pg.empty()) {
    a->pg = m.fields.pg;
    a->pg_desc = m.fields.pg_desc;
    a->pg_default = a->pg_desc == "default_pg" || a->pg == "0";
  }
  if (a->pg_rank < 0) a->pg_rank = m.fields.pg_rank;
}

// Whether the row's rank captures are global ranks here.
bool ScopeIsGlobal(RankScope scope, const Attribution& a, const FileFacts& facts) {
  switch (scope) {
    case RankScope::kGlobal:
      return true;
    case RankScope::kPg:
      return a.pg_default;
    case RankScope::kGroup:
      return facts.tp_only();
    case RankScope::kNone:
    case RankScope::kNode:
      return false;
  }
  return false;
}

// The pid of an NCCL line's "host:pid:tid [dev] " prefix
// (src/debug.cc: "%s:%d:%d [%d]"), -1 when the line has none.
int64_t NcclPrefixPid(std::string_view t) {
  size_t c1 = t.find(':');
  if (c1 == 0 || c1 == std::string_view::npos || c1 > 255 || t.substr(0, c1).find(' ') != std::string_view::npos)
    return -1;
  size_t i = c1 + 1, start = i;
  while (i < t.size() && i - start < 10 && t[i] >= '0' && t[i] <= '9') ++i;
  if (i == start || i >= t.size() || t[i] != ':') return -1;
  size_t j = i + 1;
  while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
  if (j == i + 1 || t.substr(j, 2) != " [") return -1;
  return ToInt(std::string(t.substr(start, i - start)));
}

// A crash or exit of another process (the row's subject) that names no rank
// of it: Ray's ActorDiedError, raised in the caller (the driver, ray.core.actor_died
// of python/ray/exceptions.py) for an actor its name does not place, the raylet's
// "A worker died" line, vLLM's "Engine core proc ... died". Whoever printed it is
// not the process that died, so neither its prefix nor the file's name is the rank.
bool AboutAnUnnamedProcess(const messages::Row& row, const messages::MessageFields& f) {
  bool death = row.event == messages::EventKind::kCrash || row.event == messages::EventKind::kExit;
  return death && row.subject_captured && f.rank < 0 && f.ranks.empty() && f.reporter < 0;
}

}  // namespace

void FileFacts::Observe(const logs::Line& l) {
  // The pids of NCCL prefixes: a file named by NCCL_DEBUG_FILE=%h.%p ends
  // in one, which is no rank (Finish). A few distinct ones are enough.
  if (nccl_pids_.size() < 8)
    if (int64_t pid = NcclPrefixPid(l.text); pid >= 0) nccl_pids_.insert(pid);
  logs::LinePrefix own;
  own.rank = l.rank, own.local_rank = l.local_rank;
  own.tp = l.tp, own.dp = l.dp, own.pp = l.pp;
  own.pid = l.pid;
  own.repeated = l.repeated;
  bool indented = !l.text.empty() && (l.text[0] == ' ' || l.text[0] == '\t');
  if (HasRankTag(own) || own.local_rank >= 0 || !indented) tags_ = own;  // else: keeps the line it continues
  if (l.text.empty()) return;
  NoteAssignment(l);
  NoteLocalRank(l);
  if (l.rank >= 0 && prefix_ranks_.size() < kMaxPrefixRanks) prefix_ranks_.insert(l.rank);
  if (l.local_rank >= 0 && prefix_local_ranks_.size() < kMaxPrefixRanks) prefix_local_ranks_.insert(l.local_rank);
  seen_tp_ = seen_tp_ || l.tp >= 0;
  seen_dp_ = seen_dp_ || l.dp > 0;  // DP 0 alone: see Finish
  seen_pp_ = seen_pp_ || l.pp >= 0;
  if (!HasRankTag(tags_)) ++untagged_lines_;
}

// vLLM's worker says which global rank it is once its groups exist, under
// the process tag its later lines carry (the tag's name may change, its pid
// does not): "(Worker pid=23802) INFO .. [parallel_state.py:1923] rank 0 in
// world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0,
// ..." (the row vllm.parallel_state.rank_assignment recognizes the line;
// this keeps the pid's rank for the others).
void FileFacts::NoteAssignment(const logs::Line& l) {
  if (l.pid < 0 || assigned_.size() >= kMaxPrefixRanks) return;
  if (l.text.find(" is assigned as DP rank ") == std::string_view::npos) return;
  static const RE2 kAssigned(R"re(\brank (\d+) in world size (\d+) is assigned as DP rank \d+)re");
  int64_t rank = -1, world = -1;
  if (!RE2::PartialMatch(l.text, kAssigned, &rank, &world) || rank < 0 || rank >= world) return;
  assigned_.emplace(l.pid, rank);
}

// torchrun's failure summary (torch/distributed/elastic/multiprocessing/
// errors/error_handler.py and __init__.py, ChildFailedError.format_msg) lists
// each failed worker as "  rank      : 2 (local_rank: 2)" (1.9: "rank: 2
// (local_rank: 2)"): its agent's local rank L is global rank R, which places
// the `[defaultL]:` lines of `torchrun --tee` (one agent per console). A
// local rank given two global ranks (two nodes' consoles in one file) maps
// to none.
// The entry's next line, "  exitcode  : -15 (pid: 5792)  (SIGTERM)" (1.9:
// "exitcode: -15 (pid: 5792)"), gives the worker's pid the same rank, which
// places the agent's unprefixed lines about that pid.
void FileFacts::NoteLocalRank(const logs::Line& l) {
  int64_t entry_rank = summary_rank_;
  summary_rank_ = -1;  // only the line right after the rank line is its exitcode line
  if (entry_rank >= 0 && l.text.find("(pid: ") != std::string_view::npos && pid_to_global_.size() < kMaxPrefixRanks) {
    static const RE2 kExitcode(R"re(^\s*exitcode\s*: -?\d+ \(pid: (\d+)\))re");
    int64_t pid = -1;
    if (RE2::PartialMatch(l.text, kExitcode, &pid)) {
      auto [it, fresh] = pid_to_global_.emplace(pid, entry_rank);
      if (!fresh && it->second != entry_rank) it->second = -1;
    }
    return;
  }
  if (l.text.find("(local_rank: ") == std::string_view::npos || local_to_global_.size() >= kMaxPrefixRanks) return;
  static const RE2 kFailure(R"re(^\s*rank\s*: (\d+) \(local_rank: (\d+)\))re");
  int64_t rank = -1, local = -1;
  if (!RE2::PartialMatch(l.text, kFailure, &rank, &local)) return;
  summary_rank_ = rank;
  auto [it, fresh] = local_to_global_.emplace(local, rank);
  if (!fresh && it->second != rank) it->second = -1;
}

int64_t FileFacts::GlobalOfPid(int64_t pid) const {
  auto it = pid < 0 ? pid_to_global_.end() : pid_to_global_.find(pid);
  return it == pid_to_global_.end() ? -1 : it->second;
}

int64_t FileFacts::GlobalOfLocal(int64_t local_rank) const {
  auto it = local_rank < 0 ? local_to_global_.end() : local_to_global_.find(local_rank);
  return it == local_to_global_.end() ? -1 : it->second;
}

int64_t FileFacts::AssignedRank(int64_t pid) const {
  auto it = pid < 0 ? assigned_.end() : assigned_.find(pid);
  return it == assigned_.end() ? -1 : it->second;
}

void FileFacts::Finish(int64_t rank_hint) {
  // TP indices and no DP index but 0 (vLLM's "EngineCore_0" / "EngineCore_DP0"
  // beside its workers): the global rank of a worker of engine d is
  // d * (its TP x PP size) + its index (vLLM's ParallelConfig), so in DP 0
  // without PP a TP index is the global rank.
  tp_only_ = seen_tp_ && !seen_dp_ && !seen_pp_;
  // Ranks 1..K prefixed, rank 0 never, and lines without a prefix: the
  // launcher's own process (rank 0) writes to the console unprefixed.
  implicit_rank0_ = !prefix_ranks_.empty() && *prefix_ranks_.begin() == 1 &&
                    *prefix_ranks_.rbegin() == static_cast<int64_t>(prefix_ranks_.size()) && untagged_lines_ > 0;
  rank_hint_ = prefix_ranks_.size() >= 2 ? -1 : rank_hint;
  // node01.32621.log whose NCCL lines are pid 32621's: the name gives a
  // pid, not a rank (the nccl-log reader says so when nothing else does).
  if (nccl_pids_.count(rank_hint_)) rank_hint_ = -1;
}

Attribution Attribute(const MessageMatch& m, const FileFacts& facts) {
  Attribution a;
  FillPg(m, &a);
  const messages::Row& row = *m.row;
  const messages::MessageFields& f = m.fields;
  bool global = ScopeIsGlobal(row.rank_scope, a, facts);
  a.ranks = f.ranks;
  a.ready_ranks = f.ready_ranks;
  a.peer = f.peer;
  a.ranks_pg_local = !global && row.rank_scope == RankScope::kPg;
  a.ranks_usable = global || a.ranks_pg_local;
  if (!a.ranks_usable) a.ranks.clear(), a.ready_ranks.clear(), a.peer = -1;
  // The precedence of attribution.h, in order.
  const logs::LinePrefix& t = m.tags;
  auto set = [&](int64_t rank, const char* how) {
    if (a.rank >= 0 || rank < 0) return;
    a.rank = rank;
    a.how = how;
  };
  if (f.rank >= 0) {
    if (global)
      set(f.rank, "the rank the message names");
    else if (row.subject_captured && a.ranks_pg_local && a.ranks.empty())
      a.ranks.push_back(f.rank);  // about another rank of the pg: named, not the printer
  }
  set(t.rank, "launcher prefix");
  set(facts.GlobalOfLocal(t.local_rank), "torchrun's failure summary of its local rank");
  if (m.c10d_prefix.found && a.pg_default) set(m.c10d_prefix.pg_rank, "c10d default-pg prefix");
  set(facts.AssignedRank(t.pid), "vLLM's rank assignment line of its process");
  if (row.rank_scope == RankScope::kGlobal) set(f.reporter, "the reporting rank the message names");
  if (a.pg_default) set(f.pg_rank, "the rank in the default pg the message names");
  if (facts.tp_only()) set(t.tp, "TP index of a TP-only file");
  // The torchelastic agent writes its own lines unprefixed into the same
  // console ("Sending process 5521 closing signal SIGTERM"): they are the
  // agent's, not rank 0's, whose lines they would otherwise invent.
  bool agent = row.id.rfind("torch.elastic.", 0) == 0;
  if (facts.implicit_rank0() && !HasRankTag(t) && !agent)
    set(0, "unprefixed line of a log whose other lines are ranks 1..K");
  set(row.printer, "the only rank that prints it");
  set(facts.rank_hint(), "file name");
  // A subject captured in another scope is not the printer: a row about
  // another process whose rank is not global cannot be placed.
  if (row.subject_captured && f.rank >= 0 && !global && !a.ranks_pg_local) a.rank = -1, a.how = "";
  int64_t by_pid = facts.GlobalOfPid(f.pid);
  if (AboutAnUnnamedProcess(row, f) && by_pid < 0) a.rank = -1, a.how = "";
  // A process named by its pid is the message's subject: the summary's rank
  // of that pid beats a printer's prefix or the file's name.
  if (row.subject_captured && by_pid >= 0 && f.rank < 0) a.rank = by_pid, a.how = "torchrun's failure summary of its pid";
  set(by_pid, "torchrun's failure summary of its pid");
  return a;
}

void TimeoutPgs::Apply(const MessageMatch& m, Attribution* a) {
  if (a->rank < 0) return;
  if (m.row->event == messages::EventKind::kTimeout && !a->pg.empty() && !m.row->pg_from_timeout) {
    last_[a->rank] = *a;
    return;
  }
  if (!m.row->pg_from_timeout || !a->pg.empty()) return;
  auto it = last_.find(a->rank);
  if (it == last_.end()) return;
  const Attribution& t = it->second;
  a->pg = t.pg, a->pg_desc = t.pg_desc, a->pg_default = t.pg_default, a->pg_id = t.pg_id;
  if (a->pg_rank < 0) a->pg_rank = t.pg_rank;
  // Ranks inside the default pg are global ranks.
  if (a->ranks_pg_local && a->pg_default) a->ranks_pg_local = false;
}

}  // namespace hangdx::ingest::messages_format
