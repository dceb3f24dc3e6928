#include "hangdx/ingest/formats/messages/handlers.h"

#include <algorithm>

#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest::messages_format {
namespace {

using messages::EventKind;
using messages::MessageMatch;
using Kind = model::LogEvent::Kind;

constexpr int kMaxEventsPerRank = 500;
constexpr size_t kMaxEventText = 1024;
constexpr size_t kMaxPendingTimeouts = 1 << 16;

// The handler of each event kind: the only place that says what a kind of
// message becomes.
struct HandlerRow {
  EventKind event;
  void (Handlers::*handle)(const Message&);
};
constexpr HandlerRow kHandlers[] = {
    {EventKind::kTimeout, &Handlers::OnTimeout}, {EventKind::kStatus, &Handlers::OnStatus},
    {EventKind::kOp, &Handlers::OnOp},           {EventKind::kInit, &Handlers::OnInit},
    {EventKind::kMismatch, &Handlers::OnEvent},  {EventKind::kCulprit, &Handlers::OnEvent},
    {EventKind::kStall, &Handlers::OnStall},     {EventKind::kPeerLost, &Handlers::OnEvent},
    {EventKind::kCrash, &Handlers::OnEvent},     {EventKind::kExit, &Handlers::OnEvent},
    {EventKind::kAbort, &Handlers::OnEvent},     {EventKind::kHeartbeat, &Handlers::OnEvent},
    {EventKind::kConfig, &Handlers::OnEvent},    {EventKind::kProgress, &Handlers::OnEvent},
};

// The LogEvent kind of a catalogue event kind (kOther for those that are
// not events of their own).
Kind EventKindOf(EventKind e) {
  switch (e) {
    case EventKind::kTimeout:
      return Kind::kTimeout;
    case EventKind::kMismatch:
      return Kind::kMismatch;
    case EventKind::kCulprit:
      return Kind::kCulprit;
    case EventKind::kStall:
      return Kind::kStall;
    case EventKind::kPeerLost:
      return Kind::kPeerLost;
    case EventKind::kCrash:
      return Kind::kCrash;
    case EventKind::kExit:
      return Kind::kExit;
    case EventKind::kAbort:
      return Kind::kAbort;
    case EventKind::kHeartbeat:
      return Kind::kHeartbeat;
    case EventKind::kConfig:
      return Kind::kConfig;
    case EventKind::kProgress:
      return Kind::kProgress;
    case EventKind::kOp:
    case EventKind::kStatus:
    case EventKind::kInit:
    case EventKind::kInfo:
      return Kind::kOther;
  }
  return Kind::kOther;
}

// The communication backend a row's producer runs ("nccl" for c10d's
// ProcessGroupNCCL), for OpRecord::profiling_name; "" unknown.
std::string BackendOf(const messages::Row& row) {
  const std::string& id = row.id;
  if (id.rfind("torch_npu.", 0) == 0 || id.rfind("hccl.", 0) == 0) return "hccl";
  if (id.rfind("torch.gloo.", 0) == 0) return "gloo";
  if (id.rfind("torch.", 0) == 0 || id.rfind("nccl.", 0) == 0) return "nccl";
  if (id.rfind("rccl.", 0) == 0) return "rccl";
  return "";
}

// "20,10" (a normalized shape capture) -> {20, 10}; false on junk.
bool ParseShape(const std::string& s, model::Shape* out) {
  if (s.empty() || s.find('[') != std::string::npos) return false;
  int64_t v = 0;
  bool digits = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (c - '0');
      digits = true;
    } else if (c == ',') {
      if (!digits) return false;
      out->push_back(v);
      v = 0, digits = false;
    } else {
      return false;
    }
  }
  if (digits) out->push_back(v);
  return digits;
}

}  // namespace

namespace {

// "0,1,5": a rank list as part of a key.
std::string RankKey(const std::vector<model::Rank>& ranks) {
  std::string out;
  for (model::Rank r : ranks) out += std::to_string(r) + ",";
  return out;
}

}  // namespace

model::LogEvent MakeEvent(const Message& m, Kind kind, const std::string& file) {
  const MessageMatch& x = *m.match;
  const messages::MessageFields& f = x.fields;
  model::LogEvent e;
  e.kind = kind;
  std::string_view text = x.text;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  e.message = std::string(text.substr(0, kMaxEventText));
  e.file = file;
  e.line = x.line;
  e.time_ns = m.time_ns;
  e.pg = m.who.pg;
  e.seq = f.seq >= 0 ? f.seq : f.p2p_seq;
  e.op = f.op;
  e.message_id = x.row->id;
  e.error = f.error;
  e.ranks = m.who.ranks;
  e.ready_ranks = m.who.ready_ranks;
  e.ranks_pg_local = m.who.ranks_pg_local;
  e.peer = m.who.peer;
  e.peer_addr = f.peer_addr;
  e.waited_ms = f.elapsed_ms;
  e.timeout_ms = f.timeout_ms;
  if (f.exit_code) e.exit_code = *f.exit_code;
  e.signal = f.signal;
  using Role = messages::Row::ExitRole;
  using ModelRole = model::LogEvent::ExitRole;
  e.exit_role = x.row->exit_role == Role::kFirstFailure ? ModelRole::kFirstFailure
                : x.row->exit_role == Role::kStopped    ? ModelRole::kStopped
                                                        : ModelRole::kNone;
  e.setting = f.setting;
  e.value = f.value;
  e.ends_op = x.row->ends_op;
  return e;
}

void Handlers::Handle(const Message& m) {
  for (const HandlerRow& h : kHandlers)
    if (h.event == m.match->row->event) return (this->*h.handle)(m);
  // kInfo: recognized, nothing to record.
}

bool Handlers::Emit(const Message& m, model::LogEvent e) {
  int64_t rank = m.who.rank;
  // Rank numbers past model::kMaxRank (or negative) in a message's lists
  // are no rank of any job: left out, with one warning per file, so that
  // they name no culprit and make no world.
  size_t bad = 0;
  for (auto* list : {&e.ranks, &e.ready_ranks}) {
    size_t before = list->size();
    list->erase(std::remove_if(list->begin(), list->end(), [](model::Rank r) { return r < 0 || r >= model::kMaxRank; }),
                list->end());
    bad += before - list->size();
  }
  if (bad > 0 && !warned_rank_range_) {
    warned_rank_range_ = true;
    out_->Diag(model::Diagnostic::Severity::kWarning,
               "line " + std::to_string(e.line) + ": " + m.match->row->id + " names a rank out of range (0 to " +
                   std::to_string(model::kMaxRank - 1) + "): left out of its rank lists (and later ones')",
               rank);
  }
  bool names_global = !e.ranks_pg_local && (!e.ranks.empty() || !e.ready_ranks.empty() || e.peer >= 0);
  if (rank < 0 && !names_global) {
    ++unranked_[m.match->row];
    return false;
  }
  if (rank >= 0) out_->NoteRank(rank);
  // The same message repeated (an exception and its what()) counts once. A
  // stall or culprit report printed again a minute later is evidence (the
  // same tensor still missing, a warning that repeats): it is the same only
  // on the same line, where the items of a row's `item` (one per tensor)
  // that name the same ranks say nothing more.
  std::string key = e.message_id + "\n" + e.message;
  if (e.kind == Kind::kStall || e.kind == Kind::kCulprit)
    key += "\n" + std::to_string(e.line) + ":" + RankKey(e.ranks) + "/" + RankKey(e.ready_ranks);
  if (!seen_.emplace(rank, static_cast<int>(e.kind), key).second) return false;
  if (events_of_[rank] >= kMaxEventsPerRank) {
    if (events_of_[rank]++ == kMaxEventsPerRank)
      out_->Diag(model::Diagnostic::Severity::kWarning,
                 "rank " + std::to_string(rank) + ": messages past the first " + std::to_string(kMaxEventsPerRank) +
                     " hangdx reads were left out (line " + std::to_string(e.line) + " on)",
                 rank);
    return false;
  }
  ++events_of_[rank];
  out_->AddEvent(rank, std::move(e));
  return true;
}

const model::SharedRanks& Handlers::WorldRanks(int64_t n) {
  auto it = world_ranks_.find(n);
  if (it != world_ranks_.end()) return it->second;
  std::vector<model::Rank> all(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
  return world_ranks_.emplace(n, model::SharedRanks(std::move(all))).first->second;
}

void Handlers::OnEvent(const Message& m) {
  const messages::MessageMatch& x = *m.match;
  const messages::MessageFields& f = x.fields;
  // torchrun's failure summary: an entry names rank, local rank and pid.
  if (x.row->event == messages::EventKind::kExit && f.rank >= 0 && f.local_rank >= 0 && f.pid >= 0 && f.exit_code &&
      summary_.size() < (1u << 16)) {
    summary_.push_back({f.rank, f.local_rank, *f.exit_code, f.pid});
    if (!summary_row_) summary_row_ = x.row;
  }
  if (x.row->exit_role == messages::Row::ExitRole::kStopped && f.pid >= 0 && stopped_pids_.size() < (1u << 16))
    stopped_pids_.insert(f.pid);
  Emit(m, MakeEvent(m, EventKindOf(x.row->event), out_->file()));
}

void Handlers::AddOrderlyEnds(const FileFacts& facts) {
  // Only a summary that lists a worker its agent stopped (-15, or -9 after
  // the shutdown timeout) lists every worker that did not exit 0 (2.9+).
  bool lists_stopped = false;
  std::map<int64_t, int64_t> global_of_local;
  std::set<int64_t> bases;  // global rank - local rank of each entry: one agent has one
  for (const SummaryEntry& s : summary_) {
    lists_stopped = lists_stopped || ((s.exit_code == -15 || s.exit_code == -9) && stopped_pids_.count(s.pid));
    global_of_local.emplace(s.local_rank, s.rank);
    bases.insert(s.rank - s.local_rank);
  }
  if (!lists_stopped || bases.size() != 1 || *bases.begin() < 0) return;
  for (int64_t local : facts.prefix_local_ranks()) {
    if (global_of_local.count(local)) continue;
    model::LogEvent e;
    e.kind = Kind::kExit;
    e.exit_role = model::LogEvent::ExitRole::kEndedInOrder;
    e.message = "torchrun's failure summary lists every worker of its agent that did not exit 0, the ones it stopped "
                "too, and not local rank " +
                std::to_string(local) + ": it exited 0";
    e.message_id = summary_row_->id;
    e.file = out_->file();
    int64_t rank = *bases.begin() + local;
    if (rank >= model::kMaxRank) continue;
    out_->NoteRank(rank);
    out_->AddEvent(rank, std::move(e));
  }
}

void Handlers::OnStall(const Message& m) {
  if (Emit(m, MakeEvent(m, Kind::kStall, out_->file()))) RecordRendezvous(m, false);
}

void Handlers::RecordRendezvous(const Message& m, bool timed_out) {
  const messages::MessageFields& f = m.match->fields;
  int64_t rank = m.who.rank;
  if (rank < 0 || f.seq >= 0 || f.count < 0 || f.world_size <= 0 || f.world_size > (1 << 20) || rank >= f.world_size ||
      f.pg.empty() || rendezvous_.size() >= kMaxPendingTimeouts || !rendezvous_.emplace(rank, f.pg).second)
    return;
  // Its size, not a member list: the world it implies is believed only as
  // far as the analysis believes any recorded size (analyze/world.h), and
  // a pg as large as the world has every rank as a member there
  // (analyze/groups.cc). A line naming world_size=1048576 must not list a
  // million members (it made a 170-byte line cost 1.1 GB and 7.7 s).
  model::PgConfig& c = out_->PgConfig(rank, f.pg);
  c.name = f.pg;
  c.size = std::max(c.size, f.world_size);
  c.desc = "store-based barrier";
  model::Interner& pool = out_->Strings(rank);
  model::OpRecord r;
  r.record_id = static_cast<int64_t>(out_->OpCount(rank));
  r.pg_name = pool.Str(f.pg);
  r.pg_desc = pool.Str(c.desc);
  r.profiling_name = pool.Str(BackendOf(*m.match->row) + ":barrier");
  model::ParseProfilingName(&r);
  r.collective_seq = 0;
  r.state = model::OpState::kStarted;
  r.retired = timed_out;
  r.completed = false;
  out_->AddOp(rank, r);
}

void Handlers::OnTimeout(const Message& m) {
  if (!Emit(m, MakeEvent(m, Kind::kTimeout, out_->file()))) return;
  RecordRendezvous(m, true);
  // The stuck op itself, when the message says which (pg, seq) it is.
  if (m.who.rank >= 0 && m.match->fields.seq >= 0 && timeouts_.size() < kMaxPendingTimeouts)
    timeouts_.push_back({m.match, m.who});
}

void Handlers::OnStatus(const Message& m) {
  const messages::MessageFields& f = m.match->fields;
  if (!f.ready_ranks.empty()) {  // other ranks' states (the desync report's snapshot)
    Emit(m, MakeEvent(m, Kind::kOther, out_->file()));
    return;
  }
  int64_t rank = m.who.rank;
  if (rank < 0 || (f.enqueued < 0 && f.started < 0 && f.completed < 0)) {
    ++unranked_[m.match->row];
    return;
  }
  int64_t id = m.who.pg_id >= 0 ? m.who.pg_id : 0;
  model::PgStatus& ps = out_->PgStatus(rank, id);
  ps.last_enqueued = std::max(ps.last_enqueued, f.enqueued);
  ps.last_started = std::max(ps.last_started, f.started);
  ps.last_completed = std::max(ps.last_completed, f.completed);
  if (f.seq >= 0 && !m.who.pg.empty()) status_pg_.try_emplace({rank, f.seq}, m.who);
}

void Handlers::OnOp(const Message& m) {
  const messages::MessageFields& f = m.match->fields;
  int64_t seq = f.seq >= 0 ? f.seq : f.opcount;
  if (m.who.rank < 0) {
    ++unranked_[m.match->row];
    return;
  }
  out_->NoteRank(m.who.rank);               // the rank ran ops, whichever
  if (seq < 0 || m.who.pg.empty()) return;  // an op no other rank's record can be matched with
  model::Interner& pool = out_->Strings(m.who.rank);
  model::OpRecord r;
  r.record_id = static_cast<int64_t>(out_->OpCount(m.who.rank));
  r.pg_name = pool.Str(m.who.pg);
  r.pg_desc = pool.Str(m.who.pg_desc);
  r.profiling_name = pool.Str(BackendOf(*m.match->row) + ":" + f.op);
  model::ParseProfilingName(&r);
  r.collective_seq = seq;
  r.state = model::OpState::kScheduled;
  out_->AddOp(m.who.rank, r);
}

void Handlers::OnInit(const Message& m) {
  const messages::MessageFields& f = m.match->fields;
  int64_t rank = m.who.rank;
  if (rank < 0) {
    ++unranked_[m.match->row];
    return;
  }
  out_->NoteRank(rank);
  if (f.world_size > 0 && f.world_size <= (1 << 20) && (m.who.pg.empty() || m.who.pg_default)) {
    model::PgConfig& c = out_->PgConfig(rank, "0");
    if (!c.ranks_known) {
      c.ranks = WorldRanks(f.world_size);
      c.ranks_known = true;
      if (c.desc.empty()) c.desc = "default_pg";
    }
  }
  if (!m.who.pg.empty() && m.who.pg_rank >= 0) out_->PgConfig(rank, m.who.pg).self_local = m.who.pg_rank;
}

void Handlers::RecordTimeoutOp(const PendingTimeout& t) {
  const messages::MessageFields& f = t.match->fields;
  Attribution who = t.who;
  if (!t.match->c10d_prefix.found && f.pg.empty()) {
    // No pg on the line: the status line of the same rank and seq names it.
    auto it = status_pg_.find({who.rank, f.seq});
    if (it == status_pg_.end()) return;  // the stuck op's pg is unknown: the event alone stands
    who.pg = it->second.pg, who.pg_desc = it->second.pg_desc;
  }
  int64_t rank = who.rank;
  model::Interner& pool = out_->Strings(rank);
  model::OpRecord r;
  r.record_id = static_cast<int64_t>(out_->OpCount(rank));
  r.pg_name = pool.Str(who.pg);
  r.pg_desc = pool.Str(who.pg_desc);
  r.profiling_name = pool.Str(BackendOf(*t.match->row) + ":" + f.op);
  model::ParseProfilingName(&r);
  r.is_p2p = f.op == "send" || f.op == "recv" || f.op == "recv_any_source";
  (r.is_p2p ? r.p2p_seq : r.collective_seq) = f.seq;
  model::Shape shape;
  if (f.numel_in >= 0) r.input_sizes = pool.Intern(model::Shapes{{f.numel_in}});
  if (f.numel_out >= 0) r.output_sizes = pool.Intern(model::Shapes{{f.numel_out}});
  if (f.numel_in < 0 && f.numel_out < 0 && ParseShape(f.shape, &shape))
    r.input_sizes = r.output_sizes = pool.Intern(model::Shapes{shape});
  r.state = model::OpState::kStarted;
  r.retired = true;
  r.completed = false;
  r.timeout_ms = f.timeout_ms;
  if (f.elapsed_ms >= 0) r.duration_ms = static_cast<double>(f.elapsed_ms);
  out_->AddOp(rank, r);
  // The pg's size, when the counts say it (a gather of 2 x NumelIn has two
  // members): the members that left no record are then counted.
  if (int64_t n = logs::MembersBySizes(f.op, f.numel_in, f.numel_out); n >= 2 && !who.pg.empty()) {
    model::PgConfig& cfg = out_->PgConfig(rank, who.pg);
    cfg.size = std::max(cfg.size, n);
  }
}

void Handlers::Finish() {
  // One op per (rank, pg, seq): a timeout repeated in an exception's what()
  // is the same op.
  std::set<std::tuple<int64_t, std::string, int64_t>> done;
  for (const PendingTimeout& t : timeouts_)
    if (done.emplace(t.who.rank, t.who.pg, t.match->fields.seq).second) RecordTimeoutOp(t);
  timeouts_.clear();
}

int64_t Handlers::Unranked(const messages::Row* row) const {
  auto it = unranked_.find(row);
  return it == unranked_.end() ? 0 : it->second;
}

}  // namespace hangdx::ingest::messages_format
