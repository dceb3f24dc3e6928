#include "hangdx/ingest/logs/line_util.h"

#include <charconv>
#include <cstring>
#include <map>

namespace hangdx::ingest::logs {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

// Counts leading digits of s from i.
size_t Digits(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && IsDigit(s[i + n])) ++n;
  return n;
}

// kubectl --timestamps: "2025-11-24T03:20:21.001125857Z ".
size_t KubectlPrefix(std::string_view s) {
  if (s.size() < 21 || Digits(s, 0) != 4 || s[4] != '-' || Digits(s, 5) != 2 || s[7] != '-' || Digits(s, 8) != 2 ||
      s[10] != 'T')
    return 0;
  size_t i = 11;
  while (i < s.size() && i < 48 && (IsDigit(s[i]) || s[i] == ':' || s[i] == '.')) ++i;
  if (i < s.size() && (s[i] == 'Z' || s[i] == '+' || s[i] == '-')) {
    while (i < s.size() && i < 56 && s[i] != ' ') ++i;
    if (i < s.size() && s[i] == ' ') return i + 1;
  }
  return 0;
}

// Open MPI --tag-output: "[1,0]<stdout>:", optionally after a date.
size_t MpiPrefix(std::string_view s, int64_t* rank) {
  size_t lim = std::min<size_t>(s.size(), 64);
  std::string_view head = s.substr(0, lim);
  size_t tag = head.find("]<std");
  if (tag == std::string_view::npos) return 0;
  size_t end = head.find(">:", tag);
  if (end == std::string_view::npos) return 0;
  size_t open = head.rfind('[', tag);
  if (open == std::string_view::npos) return 0;
  std::string_view inside = head.substr(open + 1, tag - open - 1);
  size_t comma = inside.find(',');
  int64_t r;
  if (comma == std::string_view::npos || !ParseDec(inside.substr(comma + 1), &r)) return 0;
  *rank = r;
  return end + 2;
}

// Ray: "(RayTrainWorker pid=615, ip=10.72.7.6) ".
size_t RayPrefix(std::string_view s) {
  if (s.empty() || s[0] != '(') return 0;
  size_t close = s.substr(0, 160).find(") ");
  if (close == std::string_view::npos) return 0;
  std::string_view inside = s.substr(1, close - 1);
  size_t sp = inside.find(" pid=");
  if (sp == std::string_view::npos || sp == 0) return 0;
  for (size_t i = 0; i < sp; ++i)
    if (!(isalnum(static_cast<unsigned char>(inside[i])) || inside[i] == '_' || inside[i] == '.')) return 0;
  return close + 2;
}

// "[rank3]:", "[default0]:", "[1803] ".
size_t BracketPrefix(std::string_view s, int64_t* rank, int64_t* local_rank) {
  if (s.size() < 3 || s[0] != '[') return 0;
  size_t close = s.substr(0, 48).find(']');
  if (close == std::string_view::npos || close < 2) return 0;
  std::string_view inside = s.substr(1, close - 1);
  size_t d = inside.size();
  while (d > 0 && IsDigit(inside[d - 1])) --d;
  if (d == inside.size()) return 0;  // no trailing number
  int64_t n;
  if (!ParseDec(inside.substr(d), &n)) return 0;
  std::string_view word = inside.substr(0, d);
  for (char c : word)
    if (!(isalpha(static_cast<unsigned char>(c)) || c == '_')) return 0;
  if (!word.empty()) {
    if (close + 1 >= s.size() || s[close + 1] != ':') return 0;
    if (word == "rank")
      *rank = n;
    else
      *local_rank = n;
    return close + 2;
  }
  // "[1803] ": a launcher tag (pid or rank, ambiguous): peeled, not used.
  if (close + 1 < s.size() && s[close + 1] == ' ') {
    // Not an NCCL "[0] NCCL INFO" tail or a py-spy-like line: those never
    // start a line with a bare "[N] " followed by nothing we parse here.
    return close + 2;
  }
  return 0;
}

// slurm srun -l: "3: ".
size_t SlurmPrefix(std::string_view s, int64_t* rank) {
  size_t n = Digits(s, 0);
  if (n == 0 || n > 6 || n + 1 >= s.size() || s[n] != ':' || s[n + 1] != ' ') return 0;
  int64_t r;
  if (!ParseDec(s.substr(0, n), &r)) return 0;
  *rank = r;
  return n + 2;
}

}  // namespace

std::string_view CleanLine(std::string_view line, std::string* buf) {
  while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
  size_t cr = line.rfind('\r');
  if (cr != std::string_view::npos) line.remove_prefix(cr + 1);
  if (line.find('\x1b') == std::string_view::npos) return line;
  buf->clear();
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c != '\x1b') {
      buf->push_back(c);
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      // CSI: ESC [ params... final byte 0x40-0x7e.
      size_t j = i + 2;
      while (j < line.size() && !(line[j] >= 0x40 && line[j] <= 0x7e)) ++j;
      i = j;
    } else {
      ++i;  // two-byte escape
    }
  }
  std::string_view out = *buf;
  while (!out.empty() && IsSpace(out.back())) out.remove_suffix(1);
  return out;
}

std::string_view PeelPrefixes(std::string_view text, int64_t* rank, int64_t* local_rank,
                              std::string_view* before_tag) {
  if (before_tag) *before_tag = {};
  for (int round = 0; round < 8 && !text.empty(); ++round) {
    size_t n = KubectlPrefix(text);
    if (!n) n = MpiPrefix(text, rank);
    if (!n) n = RayPrefix(text);
    bool ambiguous = false;
    if (!n) {
      n = BracketPrefix(text, rank, local_rank);
      ambiguous = n > 0 && text[n - 1] == ' ';  // "[3] ", not "[rank3]:"
    }
    if (!n) ambiguous = (n = SlurmPrefix(text, rank)) > 0;
    if (ambiguous && before_tag) *before_tag = text;
    if (!n) break;
    text.remove_prefix(n);
  }
  return text;
}

bool LineReader::Next(Line* line) {
  if (pos_ >= data_.size()) return false;
  size_t nl = data_.find('\n', pos_);
  size_t end = nl == std::string_view::npos ? data_.size() : nl;
  std::string_view raw = data_.substr(pos_, end - pos_);
  line->offset = static_cast<int64_t>(pos_);
  line->number = ++number_;
  line->truncated = raw.size() > kMaxLineBytes;
  if (line->truncated) {
    raw = raw.substr(0, kMaxLineBytes);
    ++truncated_;
  }
  pos_ = nl == std::string_view::npos ? data_.size() : nl + 1;
  line->rank = -1;
  line->local_rank = -1;
  std::string_view t = CleanLine(raw, &buf_);
  line->text = PeelPrefixes(t, &line->rank, &line->local_rank, &line->before_tag);
  return true;
}

bool ParseDec(std::string_view s, int64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseHex(std::string_view s, int64_t* v) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  uint64_t u;
  auto r = std::from_chars(s.data(), s.data() + s.size(), u, 16);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  if (u > static_cast<uint64_t>(INT64_MAX)) return false;
  *v = static_cast<int64_t>(u);
  return true;
}

bool ParseDecPrefix(std::string_view s, int64_t* v, size_t* used) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
  if (r.ec != std::errc()) return false;
  if (used) *used = static_cast<size_t>(r.ptr - s.data());
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool Contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::string_view Between(std::string_view s, std::string_view open, std::string_view close, bool* found) {
  if (found) *found = false;
  size_t a = s.find(open);
  if (a == std::string_view::npos) return {};
  a += open.size();
  size_t b = s.find(close, a);
  if (b == std::string_view::npos) return {};
  if (found) *found = true;
  return s.substr(a, b - a);
}

bool LooksBinary(std::string_view data) {
  std::string_view head = data.substr(0, 4096);
  if (head.find('\0') != std::string_view::npos) return true;
  size_t odd = 0;
  for (unsigned char c : head)
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\x1b' && c != '\f') ++odd;
  return !head.empty() && odd * 10 > head.size();
}

TextEncoding DecodeText(std::string_view data, std::string* text) {
  text->clear();
  std::string_view head = data.substr(0, 4096);
  auto utf16 = [&](bool little, size_t from) {
    text->reserve((data.size() - from) / 2);
    for (size_t i = from; i + 1 < data.size(); i += 2) {
      unsigned lo = static_cast<unsigned char>(data[i + (little ? 0 : 1)]);
      unsigned hi = static_cast<unsigned char>(data[i + (little ? 1 : 0)]);
      unsigned unit = hi << 8 | lo;
      if (unit == 0) continue;
      text->push_back(unit < 0x80 ? static_cast<char>(unit) : '?');
    }
    return TextEncoding::kUtf16;
  };
  if (head.size() >= 2 && head[0] == '\xff' && head[1] == '\xfe') return utf16(true, 2);
  if (head.size() >= 2 && head[0] == '\xfe' && head[1] == '\xff') return utf16(false, 2);
  if (head.find('\0') == std::string_view::npos) {
    if (LooksBinary(data)) return TextEncoding::kBinary;
    // NULs past the head: padding at the end of a long log.
    if (std::memchr(data.data(), 0, data.size()) == nullptr) return TextEncoding::kText;
  } else {
    // Every other byte NUL: UTF-16 without a BOM (ASCII text, little or big endian).
    size_t pairs = head.size() / 2, le = 0, be = 0;
    for (size_t i = 0; i + 1 < head.size(); i += 2) {
      le += head[i] != '\0' && head[i + 1] == '\0';
      be += head[i] == '\0' && head[i + 1] != '\0';
    }
    if (pairs >= 2 && le * 10 >= pairs * 8) return utf16(true, 0);
    if (pairs >= 2 && be * 10 >= pairs * 8) return utf16(false, 0);
    // NUL runs in text: the head without them must be text, and not empty
    // (a sparse or zeroed file is skipped unread).
    std::string rest;
    for (char c : head)
      if (c != '\0') rest.push_back(c);
    size_t high = 0;
    for (unsigned char c : rest) high += c >= 0x80;
    if (rest.empty() || LooksBinary(rest) || high * 10 > rest.size() * 3) return TextEncoding::kBinary;
  }
  text->reserve(data.size());
  for (char c : data)
    if (c != '\0') text->push_back(c);
  return TextEncoding::kNulPadded;
}

std::string_view NcclDtypeName(int64_t v) {
  static constexpr std::string_view kNames[] = {"Char", "Byte",  "Int",    "UInt32",   "Long",          "UInt64",
                                                "Half", "Float", "Double", "BFloat16", "Float8_e4m3fn", "Float8_e5m2"};
  if (v < 0 || v >= static_cast<int64_t>(std::size(kNames))) return {};
  return kNames[v];
}

std::string_view NcclOpToTorch(std::string_view n) {
  static const std::map<std::string_view, std::string_view> kMap = {{"AllReduce", "all_reduce"},
                                                                    {"AllGather", "all_gather"},
                                                                    {"ReduceScatter", "reduce_scatter"},
                                                                    {"Broadcast", "broadcast"},
                                                                    {"Bcast", "broadcast"},
                                                                    {"Reduce", "reduce"},
                                                                    {"Send", "send"},
                                                                    {"Recv", "recv"},
                                                                    {"AlltoAll", "all_to_all"},
                                                                    {"AllToAll", "all_to_all"},
                                                                    {"Gather", "gather"},
                                                                    {"Scatter", "scatter"},
                                                                    {"AllGatherV", "all_gather"},
                                                                    {"AlltoAllv", "all_to_all"}};
  auto it = kMap.find(n);
  return it == kMap.end() ? std::string_view() : it->second;
}

}  // namespace hangdx::ingest::logs
