#include "hangdx/live/progress.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

namespace hangdx::live {
namespace {

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

// Index just past the JSON string starting at s[i] == '"', or npos.
size_t SkipString(std::string_view s, size_t i) {
  ++i;
  for (;;) {
    const void* q = std::memchr(s.data() + i, '"', s.size() - i);
    if (!q) return std::string_view::npos;
    size_t j = static_cast<const char*>(q) - s.data();
    size_t backslashes = 0;
    while (j - backslashes > i && s[j - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return j + 1;
    i = j + 1;
  }
}

// Index just past the JSON value starting at s[i], or npos. Nesting is
// counted, not validated: the wanted values are parsed properly later.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' && s[i] != '\r' &&
           s[i] != '\t')
      ++i;
    return i;
  }
  int depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      i = SkipString(s, i);
      if (i == std::string_view::npos) return i;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
      if (depth < 0) return std::string_view::npos;
    }
    ++i;
  }
  return std::string_view::npos;
}

bool ToInt(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  auto res = std::from_chars(s.data(), s.data() + s.size(), *out);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// "[0, 1, 2]" -> {0, 1, 2}; false on anything else.
bool ParseRankList(std::string_view s, std::vector<Rank>* out) {
  size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  for (;;) {
    i = SkipSpace(s, i);
    if (i < s.size() && s[i] == ']') return true;
    Rank r = 0;
    auto res = std::from_chars(s.data() + i, s.data() + s.size(), r);
    if (res.ec != std::errc() || r < 0) return false;
    out->push_back(r);
    i = SkipSpace(s, static_cast<size_t>(res.ptr - s.data()));
    if (i < s.size() && s[i] == ',') ++i;
  }
}

}  // namespace

// One pass over the top-level members of `json`, calling `want(key, value)`
// for each (raw text); stops early when it returns false.
template <typename Want>
void ForTopLevel(std::string_view json, Want want) {
  size_t i = SkipSpace(json, 0);
  if (i >= json.size() || json[i] != '{') return;
  ++i;
  for (;;) {
    i = SkipSpace(json, i);
    if (i >= json.size() || json[i] != '"') return;
    size_t kend = SkipString(json, i);
    if (kend == std::string_view::npos) return;
    std::string_view k = json.substr(i + 1, kend - i - 2);
    i = SkipSpace(json, kend);
    if (i >= json.size() || json[i] != ':') return;
    i = SkipSpace(json, i + 1);
    size_t vend = SkipValue(json, i);
    if (vend == std::string_view::npos) return;
    if (!want(k, json.substr(i, vend - i))) return;
    i = SkipSpace(json, vend);
    if (i >= json.size() || json[i] != ',') return;
    ++i;
  }
}

std::string_view TopLevelValue(std::string_view json, std::string_view key) {
  std::string_view found;
  ForTopLevel(json, [&](std::string_view k, std::string_view v) {
    if (k != key) return true;
    found = v;
    return false;
  });
  return found;
}

StatusOr<Progress> ParseProgress(std::string_view fr_json, bool with_members, std::string_view* config_text) {
  Progress p;
  std::string_view status, version, config;
  ForTopLevel(fr_json, [&](std::string_view k, std::string_view v) {
    if (k == "pg_status") status = v;
    if (k == "version") version = v;
    if (k == "pg_config") config = v;
    return true;
  });
  if (config_text) *config_text = config;
  if (status.empty()) return DataLoss("no pg_status in the Flight Recorder JSON");
  nlohmann::json st = nlohmann::json::parse(status.begin(), status.end(), nullptr, /*allow_exceptions=*/false);
  if (!st.is_object()) return DataLoss("pg_status is not a JSON object");
  for (auto it = st.begin(); it != st.end(); ++it) {
    if (!it->is_object()) continue;
    PgProgress pg;
    pg.pg = it.key();
    bool ok = true;
    if (auto f = it->find("last_enqueued_collective"); f != it->end()) ok = ok && ToInt(*f, &pg.enqueued);
    if (auto f = it->find("last_started_collective"); f != it->end()) ok = ok && ToInt(*f, &pg.started);
    if (auto f = it->find("last_completed_collective"); f != it->end()) ok = ok && ToInt(*f, &pg.completed);
    if (ok) p.pgs.push_back(std::move(pg));
  }
  std::sort(p.pgs.begin(), p.pgs.end(), [](const PgProgress& a, const PgProgress& b) { return a.pg < b.pg; });
  if (version.size() >= 2 && version.front() == '"') p.version = std::string(version.substr(1, version.size() - 2));
  if (with_members) p.members = ParseMembers(config);
  return p;
}

std::map<std::string, std::vector<Rank>> ParseMembers(std::string_view config) {
  std::map<std::string, std::vector<Rank>> out;
  nlohmann::json cfg = nlohmann::json::parse(config.begin(), config.end(), nullptr, false);
  if (!cfg.is_object()) return out;
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (!it->is_object()) continue;
    auto r = it->find("ranks");
    std::vector<Rank> ranks;
    if (r != it->end() && r->is_string() && ParseRankList(r->get_ref<const std::string&>(), &ranks))
      out[it.key()] = std::move(ranks);
  }
  return out;
}

std::string FormatCompact(const std::vector<PgProgress>& pgs) {
  std::string s;
  for (const auto& pg : pgs) {
    if (!s.empty()) s += ',';
    s += pg.pg;
    s += '=';
    s += std::to_string(pg.enqueued);
    s += '/';
    s += std::to_string(pg.completed);
  }
  return s;
}

bool ParseCompact(std::string_view text, std::vector<PgProgress>* pgs) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = item.rfind('='), slash = item.rfind('/');
    if (eq == std::string_view::npos || slash == std::string_view::npos || slash < eq) return false;
    PgProgress pg;
    pg.pg = std::string(item.substr(0, eq));
    std::string_view e = item.substr(eq + 1, slash - eq - 1), c = item.substr(slash + 1);
    auto r1 = std::from_chars(e.data(), e.data() + e.size(), pg.enqueued);
    auto r2 = std::from_chars(c.data(), c.data() + c.size(), pg.completed);
    if (r1.ec != std::errc() || r1.ptr != e.data() + e.size() || r2.ec != std::errc() || r2.ptr != c.data() + c.size())
      return false;
    pgs->push_back(std::move(pg));
  }
  return true;
}

}  // namespace hangdx::live
