#include "hangdx/live/push.h"

#include <algorithm>

namespace hangdx::live {
namespace {

constexpr int64_t kMaxRank = int64_t{1} << 24;

bool IsRankKey(const std::string& k, Rank* r) {
  if (k.empty() || k.size() > 8 || !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *r = std::stoll(k);
  return *r < kMaxRank;
}

Status Bad(std::string why) { return InvalidArgument(std::move(why)); }

// A wait state of docs/snapshot-format.md: current_op str, waiting_for_ranks
// [rank], op_seq int, optional pg str, wait_kind "all"|"any", waited_ms int.
bool ValidWait(const nlohmann::json& w) {
  if (!w.is_object()) return false;
  if (auto f = w.find("current_op"); f != w.end() && !f->is_string()) return false;
  if (auto f = w.find("op_seq"); f != w.end() && !f->is_null() && !f->is_number_integer()) return false;
  if (auto f = w.find("pg"); f != w.end() && !f->is_string()) return false;
  if (auto f = w.find("waited_ms"); f != w.end() && !(f->is_number_integer() && f->get<int64_t>() >= 0)) return false;
  if (auto f = w.find("waiting_for_ranks"); f != w.end() && !f->is_null()) {
    if (!f->is_array()) return false;
    for (const auto& x : *f)
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= kMaxRank) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::vector<PushReport>> ParseReport(std::string_view body, size_t max_entries) {
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("the body is not JSON");
  if (!j.is_object()) return Bad("the body is not a JSON object");
  std::vector<PushReport> out;
  if (!j.contains("hangdx_report")) {
    // A wait snapshot: every key a rank, every value a wait state.
    for (auto it = j.begin(); it != j.end(); ++it) {
      PushReport r;
      if (!IsRankKey(it.key(), &r.rank)) return Bad("not a report (no \"hangdx_report\") nor a wait snapshot");
      if (!ValidWait(*it)) return Bad("rank " + it.key() + ": malformed wait state");
      r.wait = *it;
      out.push_back(std::move(r));
    }
    if (out.empty()) return Bad("an empty wait snapshot");
    return out;
  }
  PushReport r;
  auto rank = j.find("rank");
  if (rank == j.end() || !rank->is_number_integer() || rank->get<int64_t>() < 0 || rank->get<int64_t>() >= kMaxRank)
    return Bad("\"rank\" must be an integer from 0 to 16777215");
  r.rank = rank->get<int64_t>();
  for (auto [key, field] :
       {std::pair{"pid", &r.pid}, std::pair{"seq", &r.seq}, std::pair{"world_size", &r.world_size}}) {
    auto f = j.find(key);
    if (f == j.end()) continue;
    if (!f->is_number_integer() || f->get<int64_t>() < 0)
      return Bad(std::string("\"") + key + "\" must be an integer >= 0");
    *field = f->get<int64_t>();
  }
  if (auto f = j.find("fr"); f != j.end() && !f->is_null()) {
    if (!f->is_object()) return Bad("\"fr\" must be a Flight Recorder JSON object");
    if (auto st = f->find("pg_status"); st != f->end() && !st->is_object())
      return Bad("\"fr.pg_status\" must be an object");
    if (auto cfg = f->find("pg_config"); cfg != f->end() && !cfg->is_object())
      return Bad("\"fr.pg_config\" must be an object");
    if (auto e = f->find("entries"); e != f->end()) {
      if (!e->is_array()) return Bad("\"fr.entries\" must be an array");
      if (e->size() > max_entries) return Bad("more than " + std::to_string(max_entries) + " entries in one report");
      for (const auto& x : *e)
        if (!x.is_object() || !x.contains("record_id") || !(*x.find("record_id")).is_number_integer())
          return Bad("every entry needs an integer \"record_id\"");
    }
    r.fr = std::move(*f);
  }
  if (auto f = j.find("wait"); f != j.end() && !f->is_null()) {
    if (!ValidWait(*f)) return Bad("\"wait\" is not a wait state (docs/snapshot-format.md)");
    r.wait = std::move(*f);
  }
  if (auto f = j.find("stacks"); f != j.end() && !f->is_null()) {
    if (!f->is_string()) return Bad("\"stacks\" must be a string");
    r.stacks = f->get<std::string>();
  }
  out.push_back(std::move(r));
  return out;
}

bool PushBoard::Apply(const PushReport& r) {
  std::lock_guard<std::mutex> lock(mu_);
  RankBoard& b = ranks_[r.rank];
  if (r.pid >= 0 && r.seq >= 0) {
    auto [it, fresh] = b.last_seq.emplace(r.pid, r.seq);
    if (!fresh && r.seq <= it->second) return false;
    it->second = r.seq;
  }
  if (r.fr) {
    const nlohmann::json& fr = *r.fr;
    if (auto f = fr.find("pg_status"); f != fr.end()) b.pg_status = *f;
    if (auto f = fr.find("pg_config"); f != fr.end()) b.pg_config = *f;
    if (auto f = fr.find("version"); f != fr.end() && f->is_string()) b.version = f->get<std::string>();
    if (auto f = fr.find("entries"); f != fr.end())
      for (const auto& e : *f) {
        auto p2p = e.find("is_p2p");
        b.p2p = b.p2p || (p2p != e.end() && p2p->is_boolean() && p2p->get<bool>());
        b.entries[e.at("record_id").get<int64_t>()] = e;
      }
    while (b.entries.size() > max_entries_) b.entries.erase(b.entries.begin());
  }
  if (r.wait) b.wait = *r.wait;
  if (r.stacks) {
    b.stacks = *r.stacks;
    b.want_stacks = false;
  }
  return true;
}

std::vector<PgProgress> PushBoard::ProgressOf(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PgProgress> out;
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return out;
  const RankBoard& b = it->second;
  if (b.pg_status.is_object()) {
    std::string doc = nlohmann::json{{"pg_status", b.pg_status}}.dump();
    if (auto p = ParseProgress(doc, false); p.ok()) out = std::move(p->pgs);
  }
  if (b.wait) {
    const nlohmann::json& w = *b.wait;
    PgProgress p;
    p.pg = "wait:" + w.value("pg", std::string());
    p.enqueued = w.contains("op_seq") && w["op_seq"].is_number_integer() ? w["op_seq"].get<int64_t>() : 0;
    bool waiting =
        w.contains("waiting_for_ranks") && w["waiting_for_ranks"].is_array() && !w["waiting_for_ranks"].empty();
    p.completed = waiting ? p.enqueued - 1 : p.enqueued;
    out.push_back(p);
  }
  return out;
}

std::map<std::string, std::vector<Rank>> PushBoard::MembersOf(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || !it->second.pg_config.is_object()) return {};
  std::string doc = nlohmann::json{{"pg_status", nlohmann::json::object()}, {"pg_config", it->second.pg_config}}.dump();
  auto p = ParseProgress(doc, true);
  return p.ok() ? p->members : std::map<std::string, std::vector<Rank>>{};
}

std::vector<Rank> PushBoard::Ranks() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Rank> out;
  for (const auto& [r, b] : ranks_) out.push_back(r);
  return out;
}

std::string PushBoard::FrJson(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || (it->second.entries.empty() && !it->second.pg_status.is_object())) return "";
  const RankBoard& b = it->second;
  // The keys FlightRecorder::dump_json writes, in its (sorted) order.
  nlohmann::json j = nlohmann::json::object();
  j["comm_lib_version"] = "";
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [id, e] : b.entries) entries.push_back(e);
  j["entries"] = std::move(entries);
  j["pg_config"] = b.pg_config.is_object() ? b.pg_config : nlohmann::json::object();
  j["pg_status"] = b.pg_status.is_object() ? b.pg_status : nlohmann::json::object();
  j["version"] = b.version;
  return j.dump();
}

bool PushBoard::CountsCollectives(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || it->second.p2p || it->second.entries.empty() || !it->second.pg_status.is_object())
    return false;
  const nlohmann::json& last = it->second.entries.rbegin()->second;
  auto pg = last.find("pg_id"), seq = last.find("collective_seq_id");
  if (pg == last.end() || seq == last.end() || !pg->is_number_integer() || !seq->is_number_integer()) return false;
  auto status = it->second.pg_status.find(std::to_string(pg->get<int64_t>()));
  if (status == it->second.pg_status.end() || !status->is_object()) return false;
  // torch writes the counters as decimal strings (progress.h).
  auto enqueued = status->find("last_enqueued_collective");
  if (enqueued == status->end()) return false;
  std::string want = std::to_string(seq->get<int64_t>());
  return enqueued->is_string() ? enqueued->get<std::string>() == want
                               : enqueued->is_number_integer() && enqueued->get<int64_t>() == seq->get<int64_t>();
}

std::string PushBoard::Stacks(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? "" : it->second.stacks;
}

std::string PushBoard::WaitSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [r, b] : ranks_)
    if (b.wait) j[std::to_string(r)] = *b.wait;
  return j.empty() ? "" : j.dump(1);
}

size_t PushBoard::entries(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? 0 : it->second.entries.size();
}

void PushBoard::WantStacks(const std::vector<Rank>& ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Rank r : ranks) ranks_[r].want_stacks = true;
}

bool PushBoard::Wants(Rank rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.want_stacks;
}

}  // namespace hangdx::live
