#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "hangdx/ingest/json_util.h"

namespace hangdx::ingest {
namespace {

constexpr int64_t kMaxRank = int64_t{1} << 24;  // more ranks than any job has had

bool RankKey(const std::string& key, int64_t* r) {
  auto res = std::from_chars(key.data(), key.data() + key.size(), *r);
  return res.ec == std::errc() && res.ptr == key.data() + key.size() && *r >= 0 && *r < kMaxRank;
}

bool IsSnapshot(const nlohmann::json& j) {
  if (!j.is_object() || j.empty()) return false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    bool digits =
        !k.empty() && k.size() <= 19 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || !it->is_object()) return false;
    if (!it->contains("waiting_for_ranks") && !it->contains("current_op")) return false;
  }
  return true;
}

// Reads one rank's wait state; false when a field has the wrong type.
bool ReadWait(const nlohmann::json& v, model::WaitSnapshot* w) {
  if (auto f = v.find("current_op"); f != v.end()) {
    if (!f->is_string()) return false;
    w->current_op = f->get<std::string>();
  }
  if (auto f = v.find("op_seq"); f != v.end() && !f->is_null()) {
    if (!f->is_number_integer()) return false;
    w->op_seq = f->get<int64_t>();
  }
  if (auto f = v.find("wait_kind"); f != v.end()) {
    if (!f->is_string() || (*f != "any" && *f != "all")) return false;
    w->any_of = *f == "any";
  }
  // How long it has waited, and from how long that is a hang (docs/snapshot-format.md).
  for (auto [key, field, least] : {std::tuple{"waited_ms", &w->waited_ms, int64_t{0}},
                                   std::tuple{"stall_after_ms", &w->stall_after_ms, int64_t{1}}}) {
    auto f = v.find(key);
    if (f == v.end() || f->is_null()) continue;
    if (!f->is_number_integer() || f->get<int64_t>() < least) return false;
    *field = f->get<int64_t>();
  }
  if (auto f = v.find("waiting_for_ranks"); f != v.end() && !f->is_null()) {
    if (!f->is_array()) return false;
    for (const auto& x : *f) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= kMaxRank) return false;
      w->waiting_for.push_back(x.get<int64_t>());
    }
  }
  std::sort(w->waiting_for.begin(), w->waiting_for.end());
  w->waiting_for.erase(std::unique(w->waiting_for.begin(), w->waiting_for.end()), w->waiting_for.end());
  return true;
}

// At most this many in-flight collectives per pg become records of a
// rank known by its progress: a hang is at the lowest unfinished seqs.
constexpr int64_t kMaxInFlight = 4;

// Reads "progress": {"<pg>": {"enqueued": E, "completed": C}} (integers >=
// -1, E >= C); false when malformed.
bool ReadProgress(const nlohmann::json& v, std::vector<std::tuple<std::string, int64_t, int64_t>>* pgs) {
  auto f = v.find("progress");
  if (f == v.end() || f->is_null()) return true;
  if (!f->is_object()) return false;
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (!it->is_object()) return false;
    int64_t e = -2, c = -2;
    for (auto [key, field] : {std::pair{"enqueued", &e}, std::pair{"completed", &c}}) {
      auto x = it->find(key);
      if (x == it->end() || !x->is_number_integer() || x->get<int64_t>() < -1) return false;
      *field = x->get<int64_t>();
    }
    if (e < c) return false;
    pgs->emplace_back(it.key(), e, c);
  }
  return true;
}

// The records a rank known by its progress counters alone stands for: per
// pg its last completed collective (completed: the seqs before it are
// outside what this record shows, as for a Flight Recorder ring that
// wrapped) and its enqueued, unfinished ones (the lowest kMaxInFlight), of
// an op kind nobody recorded. No size, dtype or stack: those are unknown,
// never guessed.
void AddProgressOps(model::Rank rank, const std::vector<std::tuple<std::string, int64_t, int64_t>>& pgs,
                    RecordSink* out) {
  for (const auto& [pg, enqueued, completed] : pgs) {
    model::Interner& pool = out->Strings(rank);
    int64_t id = -1;
    auto res = std::from_chars(pg.data(), pg.data() + pg.size(), id);
    if (res.ec != std::errc() || res.ptr != pg.data() + pg.size()) id = -1;
    auto add = [&](int64_t seq, bool done) {
      model::OpRecord r;
      r.record_id = static_cast<int64_t>(out->OpCount(rank));
      r.pg_id = id;
      r.pg_name = pool.Str(pg);
      r.collective_seq = seq;
      r.op_id = seq;
      r.state = done ? model::OpState::kCompleted : model::OpState::kUnknown;
      r.completed = done;
      out->AddOp(rank, r);
    };
    if (completed >= 1) add(completed, true);
    for (int64_t seq = std::max<int64_t>(completed + 1, 1); seq <= enqueued && seq <= completed + kMaxInFlight; ++seq)
      add(seq, false);
  }
}

}  // namespace

int SniffWaitSnapshot(std::string_view data) {
  size_t i = 0;
  while (i < data.size() && std::isspace(static_cast<unsigned char>(data[i]))) ++i;
  if (i >= data.size() || (data[i] != '{' && data[i] != '[')) return 0;
  std::string_view head = data.substr(0, 4096);
  bool keys = head.find("\"waiting_for_ranks\"") != std::string_view::npos ||
              head.find("\"current_op\"") != std::string_view::npos;
  return keys ? 80 : 0;
}

bool ParseWaitSnapshot(const Artifact& in, RecordSink* out) {
  auto diag = [&](model::Rank rank, std::string msg, int64_t offset = -1) {
    out->Diag(model::Diagnostic::Severity::kWarning, std::move(msg), rank, offset);
  };
  nlohmann::json j;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  if (!ParseJson(in.data, &j, &error, &offset, &dups)) {
    diag(-1, std::move(error), offset);
    return false;
  }
  WarnDuplicateKeys(dups, -1, out);
  if (!IsSnapshot(j)) {
    diag(-1, "not a wait snapshot: want {\"<rank>\": {\"current_op\", \"waiting_for_ranks\", \"op_seq\"}}");
    return false;
  }
  std::set<model::Rank> seen;  // "0" and "00" are one rank: the first wait counts
  for (auto it = j.begin(); it != j.end(); ++it) {
    model::Rank rank = -1;
    if (!RankKey(it.key(), &rank)) {
      diag(-1, "rank " + it.key() + " is out of range (0 to 16777215); skipped");
      continue;
    }
    model::WaitSnapshot w;
    std::vector<std::tuple<std::string, int64_t, int64_t>> progress;
    if (!ReadWait(*it, &w) || !ReadProgress(*it, &progress)) {
      diag(rank, "rank " + it.key() +
                     ": malformed wait state (want current_op: str, "
                     "waiting_for_ranks: [ranks 0 to 16777215], op_seq: int, waited_ms: int >= 0, "
                     "stall_after_ms: int > 0, progress: {pg: {enqueued: int, completed: int}}); skipped");
      continue;
    }
    if (seen.insert(rank).second) {
      out->SetWait(rank, std::move(w));
      AddProgressOps(rank, progress, out);
    } else  // "007" after "7", or "7" after "07" (keys come sorted as text)
      diag(rank, "rank key '" + it.key() + "' names rank " + std::to_string(rank) +
                     " again (another key did too): the first wait counts, this one is skipped");
  }
  return !seen.empty();
}

}  // namespace hangdx::ingest
