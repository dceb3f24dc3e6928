#include "hangdx/ingest/merge.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace hangdx::ingest {
namespace {

using model::OpRecord;
using Key = std::tuple<std::string_view, bool, int64_t>;  // (pg, is P2P, seq)

int64_t SeqOf(const OpRecord& op) { return op.is_p2p ? op.p2p_seq : op.collective_seq; }

// "all_gather_into_tensor" -> "allgather"; "barrier" -> "allreduce".
std::string CanonicalOp(std::string_view op) {
  std::string s;
  for (char c : op)
    if (c != '_') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view suffix : {"intotensor", "coalesced", "single", "tensor", "base"})
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
      s.resize(s.size() - suffix.size());
  if (s == "barrier") s = "allreduce";
  return s;
}

// Elements over all tensors; -1 when no size is recorded.
int64_t TotalNumel(const model::Shapes& shapes) {
  if (shapes.empty()) return -1;
  int64_t n = 0;
  for (const auto& s : shapes) {
    int64_t k = model::Numel(s);
    n = k > INT64_MAX - n ? INT64_MAX : n + k;
  }
  return n;
}

std::set<std::string> DtypeSet(const model::Dtypes& d) { return {d.begin(), d.end()}; }

// Copies op (a record of `from`) into `into`'s interner and frame table.
class Copier {
 public:
  Copier(const model::RankDump& from, model::RankDump* into) : from_(from), into_(into) {}

  OpRecord Copy(const OpRecord& op) {
    model::Interner& pool = *into_->interner;
    OpRecord r = op;
    r.pg_name = pool.Str(op.pg_name);
    r.pg_desc = pool.Str(op.pg_desc);
    r.profiling_name = pool.Str(op.profiling_name);
    r.backend = pool.Str(op.backend);
    r.op = pool.Str(op.op);
    r.thread_name = pool.Str(op.thread_name);
    r.thread_id = pool.Str(op.thread_id);
    r.input_sizes = pool.InternCopy(*op.input_sizes);
    r.output_sizes = pool.InternCopy(*op.output_sizes);
    r.input_dtypes = pool.InternCopy(*op.input_dtypes);
    r.output_dtypes = pool.InternCopy(*op.output_dtypes);
    r.frames = Frames(op);
    r.source = Source(op.source);
    return r;
  }

  model::Ref<model::Stack> Frames(const OpRecord& op) {
    model::Stack s;
    for (uint32_t id : *op.frames) {
      if (id >= from_.frames.size()) continue;
      auto [it, fresh] = frame_map_.try_emplace(id, static_cast<uint32_t>(into_->frames.size()));
      if (fresh) into_->frames.push_back(from_.frames[id]);
      s.push_back(it->second);
    }
    return into_->interner->Intern(std::move(s));
  }

  // The index in into->extra_files of the file a record of `from` came from.
  int32_t Source(int32_t from_source) {
    const std::string& file = from_source >= 0 && static_cast<size_t>(from_source) < from_.extra_files.size()
                                  ? from_.extra_files[from_source]
                                  : from_.file;
    if (file == into_->file) return -1;
    auto& files = into_->extra_files;
    auto it = std::find(files.begin(), files.end(), file);
    if (it == files.end()) it = files.insert(files.end(), file);
    return static_cast<int32_t>(it - files.begin());
  }

 private:
  const model::RankDump& from_;
  model::RankDump* into_;
  std::map<uint32_t, uint32_t> frame_map_;
};

const std::string& FileOf(const model::RankDump& d, const OpRecord& op) {
  return op.source >= 0 && static_cast<size_t>(op.source) < d.extra_files.size() ? d.extra_files[op.source] : d.file;
}

std::string Describe(const OpRecord& op) {
  std::string s(op.op.empty() ? op.profiling_name : op.op);
  int64_t n = TotalNumel(*op.input_sizes);
  if (n >= 0) s += " of " + std::to_string(n) + " elements";
  if (!op.input_dtypes->empty()) s += " " + op.input_dtypes->front();
  return s;
}

// Fills what `base` lacks from `other` (the same op seen by another source);
// returns what the two disagree on ("" when nothing).
std::string Fill(OpRecord* base, const OpRecord& other, Copier* copy, const model::RankDump& into) {
  model::Interner& pool = *into.interner;
  std::string conflict;
  if (!SameOpKind(base->op, other.op)) conflict = "op type";
  int64_t na = TotalNumel(*base->input_sizes), nb = TotalNumel(*other.input_sizes);
  int64_t oa = TotalNumel(*base->output_sizes), ob = TotalNumel(*other.output_sizes);
  if ((na >= 0 && nb >= 0 && na != nb) || (oa >= 0 && ob >= 0 && oa != ob))
    conflict += (conflict.empty() ? "" : ", ") + std::string("element count");
  if (!base->input_dtypes->empty() && !other.input_dtypes->empty() &&
      DtypeSet(*base->input_dtypes) != DtypeSet(*other.input_dtypes))
    conflict += (conflict.empty() ? "" : ", ") + std::string("dtype");
  if (base->op.empty() && !other.op.empty()) {
    base->profiling_name = pool.Str(other.profiling_name);
    base->backend = pool.Str(other.backend);
    base->op = pool.Str(other.op);
  }
  if (base->input_sizes->empty()) base->input_sizes = pool.InternCopy(*other.input_sizes);
  if (base->output_sizes->empty()) base->output_sizes = pool.InternCopy(*other.output_sizes);
  if (base->input_dtypes->empty()) base->input_dtypes = pool.InternCopy(*other.input_dtypes);
  if (base->output_dtypes->empty()) base->output_dtypes = pool.InternCopy(*other.output_dtypes);
  if (base->frames->empty() && !other.frames->empty()) base->frames = copy->Frames(other);
  if (base->pg_desc.empty()) base->pg_desc = pool.Str(other.pg_desc);
  if (base->thread_id.empty()) base->thread_id = pool.Str(other.thread_id);
  if (base->thread_name.empty()) base->thread_name = pool.Str(other.thread_name);
  if (base->state == model::OpState::kUnknown && other.state != model::OpState::kUnknown) {
    base->state = other.state;
    base->completed = other.completed;
    base->retired = other.retired;
  }
  if (base->timeout_ms < 0) base->timeout_ms = other.timeout_ms;
  if (base->duration_ms < 0) base->duration_ms = other.duration_ms;
  if (base->time_created_ns == 0) base->time_created_ns = other.time_created_ns;
  if (base->time_started_ns == 0) base->time_started_ns = other.time_started_ns;
  if (base->time_completed_ns == 0) base->time_completed_ns = other.time_completed_ns;
  return conflict;
}

}  // namespace

bool SameOpKind(std::string_view a, std::string_view b) {
  return a.empty() || b.empty() || CanonicalOp(a) == CanonicalOp(b);
}

namespace {

// A collective of the dump's own records that has not ended.
bool PendingOwnCollective(const OpRecord& op) {
  return op.source < 0 && !op.is_p2p && op.collective_seq >= 0 && !op.completed && !op.retired;
}

// The index of the op `e` ended among d.ops, or -1 when none is known.
int64_t OpEndedBy(const model::RankDump& d, const model::LogEvent& e) {
  int64_t found = -1;
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const OpRecord& op = d.ops[i];
    if (!PendingOwnCollective(op)) continue;
    if (e.seq >= 0 && op.collective_seq != e.seq) continue;
    if (!e.pg.empty() && op.pg_name != e.pg) continue;
    // An error printed before the op was created is an earlier op's.
    if (e.time_ns > 0 && op.time_created_ns > 0 && e.time_ns < op.time_created_ns) continue;
    if (found >= 0) return -1;  // two candidates: which one failed is not known
    found = static_cast<int64_t>(i);
  }
  return found;
}

}  // namespace

std::vector<size_t> OpsEndedByLogs(const model::RankDump& d) {
  std::vector<size_t> out;
  if (!d.from_flight_recorder) return out;
  for (const model::LogEvent& e : d.events) {
    if (!e.ends_op) continue;
    int64_t i = OpEndedBy(d, e);
    if (i >= 0) out.push_back(static_cast<size_t>(i));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t EndOpsEndedByLogs(model::RankDump* d, model::DiagnosticSink* diags) {
  if (!d->from_flight_recorder) return 0;
  size_t ended = 0;
  for (const model::LogEvent& e : d->events) {
    if (!e.ends_op) continue;
    int64_t i = OpEndedBy(*d, e);
    if (i < 0) continue;
    OpRecord& op = d->ops[static_cast<size_t>(i)];
    // Retired, not completed: it ended by failing while the rank waited in
    // it (what the analysis reads as timed out, analyze/checks/stall.cc),
    // so the wait it shows stays a wait (a cycle through it is still one).
    op.retired = true;
    if (op.timeout_ms < 0) op.timeout_ms = e.timeout_ms;
    ++ended;
    diags->Add(model::Diagnostic::Severity::kInfo, e.file,
               "rank " + std::to_string(d->rank) + ": line " + std::to_string(e.line) + " is the error that ended pg " +
                   (op.pg_name.empty() ? std::string("''") : std::string(op.pg_name)) + " seq " +
                   std::to_string(op.collective_seq) + " " + std::string(op.op) + ", which " + d->file +
                   " shows pending (dumped before it failed): taken as failed",
               d->rank);
  }
  return ended;
}

void MergeRankOps(model::RankDump* into, const model::RankDump& from, model::DiagnosticSink* diags) {
  for (const auto& [name, cfg] : from.pg_config)
    if (!into->pg_config.count(name)) into->pg_config.emplace(name, cfg);
  for (const auto& [id, st] : from.pg_status) into->pg_status.try_emplace(id, st);
  if (into->comm_lib_version.empty()) into->comm_lib_version = from.comm_lib_version;
  if (from.ops.empty()) return;

  // into's keyed ops, and per (pg, P2P) its seqs in order with their index.
  std::map<Key, size_t> keyed;
  std::map<std::pair<std::string_view, bool>, std::vector<std::pair<int64_t, size_t>>> by_pg;
  for (size_t i = 0; i < into->ops.size(); ++i) {
    const OpRecord& op = into->ops[i];
    int64_t seq = SeqOf(op);
    if (seq < 0) continue;
    keyed.try_emplace(Key{op.pg_name, op.is_p2p, seq}, i);
    by_pg[{op.pg_name, op.is_p2p}].emplace_back(seq, i);
  }
  for (auto& [pg, list] : by_pg) std::stable_sort(list.begin(), list.end());

  Copier copy(from, into);
  std::vector<std::pair<size_t, OpRecord>> added;  // (insert before this index of into->ops, op)
  for (const OpRecord& op : from.ops) {
    int64_t seq = SeqOf(op);
    auto hit = seq >= 0 ? keyed.find(Key{op.pg_name, op.is_p2p, seq}) : keyed.end();
    if (hit != keyed.end()) {
      OpRecord& base = into->ops[hit->second];
      std::string what = Fill(&base, op, &copy, *into);
      if (!what.empty())
        diags->Add(model::Diagnostic::Severity::kWarning, FileOf(from, op),
                   "rank " + std::to_string(into->rank) + ", pg " + std::string(op.pg_name) + " seq " +
                       std::to_string(seq) + ": this file says " + Describe(op) + ", " + FileOf(*into, base) +
                       " says " + Describe(base) + " (" + what + " differ); using the latter",
                   into->rank);
      continue;
    }
    // Position: after the last op of the same pg with a lower seq, else
    // before the first with a higher one, else at the end.
    size_t pos = into->ops.size();
    auto pg = by_pg.find({op.pg_name, op.is_p2p});
    if (seq >= 0 && pg != by_pg.end()) {
      const auto& list = pg->second;
      auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(seq, size_t{0}));
      if (it != list.begin())
        pos = std::prev(it)->second + 1;
      else
        pos = it->second;
    }
    added.emplace_back(pos, copy.Copy(op));
  }
  if (added.empty()) return;
  std::stable_sort(added.begin(), added.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<OpRecord> merged;
  merged.reserve(into->ops.size() + added.size());
  size_t k = 0;
  for (size_t i = 0; i <= into->ops.size(); ++i) {
    while (k < added.size() && added[k].first == i) merged.push_back(std::move(added[k++].second));
    if (i < into->ops.size()) merged.push_back(into->ops[i]);
  }
  into->ops = std::move(merged);
}

}  // namespace hangdx::ingest
