#include "hangdx/base/rank_set.h"

#include <algorithm>
#include <charconv>

namespace hangdx {

std::string FormatRanks(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string RankWords(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text = FormatRanks(ranks);
  if (text.size() > 60) {
    size_t cut = text.rfind(',', 48);
    text = text.substr(0, cut == std::string::npos ? 48 : cut) + ",... (" + std::to_string(ranks.size()) + " ranks)";
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

std::string Count(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool ParseRanks(const std::string& text, std::vector<int64_t>* out, int64_t max_count) {
  out->clear();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view item(text.data() + pos, end - pos);
    size_t dash = item.find('-', 1);
    int64_t lo = 0, hi = 0;
    auto parse = [](std::string_view s, int64_t* v) {
      auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
      return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
    };
    if (dash == std::string_view::npos) {
      if (!parse(item, &lo)) return false;
      hi = lo;
    } else if (!parse(item.substr(0, dash), &lo) || !parse(item.substr(dash + 1), &hi)) {
      return false;
    }
    if (hi < lo || hi - lo >= max_count || static_cast<int64_t>(out->size()) + (hi - lo) >= max_count) return false;
    for (int64_t r = lo; r <= hi; ++r) out->push_back(r);
    pos = end + 1;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

}  // namespace hangdx
