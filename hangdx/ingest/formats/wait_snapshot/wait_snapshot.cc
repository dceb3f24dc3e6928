#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

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

}  // namespace

bool LooksLikeWaitSnapshot(std::string_view data) {
  try {
    nlohmann::json j = nlohmann::json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    return IsSnapshot(j);
  } catch (const nlohmann::json::exception&) {  // e.g. a number out of range
    return false;
  }
}

bool ParseWaitSnapshot(std::string_view data, const std::string& file, std::vector<model::RankDump>* out,
                       std::vector<model::Diagnostic>* diags) {
  auto diag = [&](model::Rank rank, std::string msg, int64_t offset = -1) {
    diags->push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kWarning, file, std::move(msg), rank, offset));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(data.begin(), data.end());
  } catch (const nlohmann::json::parse_error& e) {
    diag(-1, std::string("unreadable JSON at byte ") + std::to_string(e.byte > 0 ? e.byte - 1 : 0) + ": " + JsonWhy(e),
         static_cast<int64_t>(e.byte > 0 ? e.byte - 1 : 0));
    return false;
  } catch (const nlohmann::json::exception& e) {
    // Parses that fail for another reason (a number out of range: 1E400).
    diag(-1, "unreadable JSON: " + JsonWhy(e));
    return false;
  }
  if (!IsSnapshot(j)) {
    diag(-1, "not a wait snapshot: want {\"<rank>\": {\"current_op\", \"waiting_for_ranks\", \"op_seq\"}}");
    return false;
  }
  size_t before = out->size();
  for (auto it = j.begin(); it != j.end(); ++it) {
    model::RankDump d;
    if (!RankKey(it.key(), &d.rank)) {
      diag(-1, "rank " + it.key() + " is out of range (0 to 16777215); skipped");
      continue;
    }
    d.file = file;
    model::WaitSnapshot w;
    const auto& v = *it;
    bool ok = true;
    if (auto f = v.find("current_op"); f != v.end()) {
      if (f->is_string())
        w.current_op = f->get<std::string>();
      else
        ok = false;
    }
    if (auto f = v.find("op_seq"); f != v.end() && !f->is_null()) {
      if (f->is_number_integer())
        w.op_seq = f->get<int64_t>();
      else
        ok = false;
    }
    if (auto f = v.find("wait_kind"); f != v.end()) {
      if (f->is_string() && (*f == "any" || *f == "all"))
        w.any_of = *f == "any";
      else
        ok = false;
    }
    if (auto f = v.find("waiting_for_ranks"); f != v.end() && !f->is_null()) {
      if (!f->is_array()) ok = false;
      for (const auto& x : *f) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= kMaxRank) {
          ok = false;
          break;
        }
        w.waiting_for.push_back(x.get<int64_t>());
      }
    }
    if (!ok) {
      diag(d.rank, "rank " + it.key() +
                       ": malformed wait state (want current_op: str, "
                       "waiting_for_ranks: [ranks 0 to 16777215], op_seq: int); skipped");
      continue;
    }
    std::sort(w.waiting_for.begin(), w.waiting_for.end());
    w.waiting_for.erase(std::unique(w.waiting_for.begin(), w.waiting_for.end()), w.waiting_for.end());
    d.wait = std::move(w);
    out->push_back(std::move(d));
  }
  return out->size() > before;
}

}  // namespace hangdx::ingest
