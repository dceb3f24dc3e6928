#include "hangdx/ingest/logs/line_util.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "hangdx/base/mapped_file.h"
#include "hangdx/model/job.h"

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

// Open MPI --tag-output: "[1,0]<stdout>:" (job, rank), optionally after a
// date; horovodrun's own launcher (gloo, horovod/runner/common/util/
// safe_shell_exec.py) tags "[0]<stderr>:" with the rank alone.
size_t MpiPrefix(std::string_view s, int64_t* rank) {
  size_t lim = std::min<size_t>(s.size(), 64);
  std::string_view head = s.substr(0, lim);
  size_t tag = head.find("]<std");
  if (tag == std::string_view::npos) return 0;
  size_t end = head.find(">:", tag);
  if (end == std::string_view::npos) return 0;
  size_t open = head.rfind('[', tag);
  if (open == std::string_view::npos) return 0;
  // Only a date may come before the tag ("Fri Aug 11 12:31:45 2023[1,0]"):
  // a tag mpirun wrote into the middle of another line's prefix
  // ("[2019-04-13 13:53:31.[1,0]<stderr>:851588: W") is not peeled with it.
  if (head.substr(0, open).find('[') != std::string_view::npos) return 0;
  std::string_view inside = head.substr(open + 1, tag - open - 1);
  size_t comma = inside.find(',');
  int64_t r;
  if (!ParseDec(comma == std::string_view::npos ? inside : inside.substr(comma + 1), &r)) return 0;
  *rank = r;
  return end + 2;
}

// "[rank3]:", "[default0]:", "[1803] ".
size_t BracketPrefix(std::string_view s, int64_t* rank, int64_t* local_rank, int64_t* bare) {
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
  // "[1803] ": a launcher tag (pid, line number or rank, ambiguous): peeled;
  // the file's layout says whether it is a rank.
  if (close + 1 < s.size() && s[close + 1] == ' ') {
    *bare = n;
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

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || IsUpper(c); }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }

// "TP1" -> ('T', 1) style group tags: two or three upper-case letters and a
// number. Sets the tp/dp/pp index it names; false when `tag` is none.
bool GroupTag(std::string_view tag, LinePrefix* p) {
  size_t n = 0;
  while (n < tag.size() && IsUpper(tag[n])) ++n;
  if (n < 2 || n > 3 || n == tag.size() || Digits(tag, n) != tag.size() - n || tag.size() - n > 6) return false;
  int64_t v = 0;
  if (!ParseDec(tag.substr(n), &v)) return false;
  std::string_view kind = tag.substr(0, n);
  if (kind == "TP")
    p->tp = static_cast<int32_t>(v);
  else if (kind == "DP")
    p->dp = static_cast<int32_t>(v);
  else if (kind == "PP")
    p->pp = static_cast<int32_t>(v);
  // EP, CP, ...: recognized (the tag is peeled), no index kept.
  return true;
}

// Ray and vLLM process tags: "(RayTrainWorker pid=615, ip=10.72.7.6) ",
// "(VllmWorker rank=1 pid=9) ", "(VllmWorker TP1 pid=9) ",
// "(Worker_PP1_TP0 pid=9) ", "(EngineCore_DP0 pid=9) ", "(EngineCore_0
// pid=9) ", "(pid=8464) ", "(raylet) ". A name, then tokens; a tag without
// pid= is peeled only for Ray's own daemons.
size_t ParenPrefix(std::string_view s, LinePrefix* p) {
  if (s.size() < 4 || s[0] != '(') return 0;
  size_t close = s.substr(0, 200).find(')');
  if (close == std::string_view::npos || close < 2 || (close + 1 < s.size() && s[close + 1] != ' ')) return 0;
  std::string_view inside = s.substr(1, close - 1);
  LinePrefix got;
  bool pid = false, first = true;
  std::string_view name;
  while (!inside.empty()) {
    size_t sp = inside.find(' ');
    std::string_view tok = inside.substr(0, sp);
    inside = sp == std::string_view::npos ? std::string_view() : inside.substr(sp + 1);
    if (!tok.empty() && tok.back() == ',') tok.remove_suffix(1);
    if (tok.empty()) continue;
    int64_t v = 0;
    if (tok.substr(0, 4) == "pid=" && ParseDec(tok.substr(4), &v)) {
      pid = true;
      got.pid = v;
    } else if (tok.substr(0, 3) == "ip=") {
      // an address, no rank
    } else if (tok.substr(0, 5) == "rank=" && ParseDec(tok.substr(5), &v)) {
      got.rank = v;
    } else if (GroupTag(tok, &got)) {
    } else if (first && (IsAlpha(tok[0]) || tok[0] == '_')) {
      for (char c : tok)
        if (!(IsAlnum(c) || c == '_' || c == '.' || c == '-')) return 0;
      name = tok;
    } else {
      return 0;
    }
    first = false;
  }
  if (!pid && name != "raylet" && name != "gcs_server" && name != "dashboard" && name != "autoscaler") return 0;
  // Groups in the name: Worker_PP1_TP0, EngineCore_DP0; EngineCore_0 is DP 0.
  for (size_t i = 0; i < name.size();) {
    size_t u = name.find('_', i);
    std::string_view seg = name.substr(i, u == std::string_view::npos ? std::string_view::npos : u - i);
    int64_t v = 0;
    if (!GroupTag(seg, &got) && i > 0 && name.substr(0, i - 1) == "EngineCore" && ParseDec(seg, &v))
      got.dp = static_cast<int32_t>(v);
    if (u == std::string_view::npos) break;
    i = u + 1;
  }
  if (got.rank >= 0) p->rank = got.rank;
  if (got.tp >= 0) p->tp = got.tp;
  if (got.dp >= 0) p->dp = got.dp;
  if (got.pp >= 0) p->pp = got.pp;
  if (got.pid >= 0) p->pid = got.pid;
  return std::min(close + 2, s.size());
}

// "2025-01-01 12:00:00" or "2019-06-04T16:49:20Z" (fraction after '.', ','
// or ':'; a zone): its length at s[0], or 0.
size_t DateTime(std::string_view s) {
  if (s.size() < 19 || Digits(s, 0) != 4 || s[4] != '-' || Digits(s, 5) != 2 || s[7] != '-' || Digits(s, 8) != 2 ||
      (s[10] != ' ' && s[10] != 'T') || Digits(s, 11) != 2 || s[13] != ':' || Digits(s, 14) != 2 || s[16] != ':' ||
      Digits(s, 17) != 2)
    return 0;
  size_t i = 19;
  if (i + 1 < s.size() && (s[i] == '.' || s[i] == ',' || s[i] == ':') && IsDigit(s[i + 1])) i += 1 + Digits(s, i + 1);
  if (i < s.size() && s[i] == 'Z') ++i;
  return i;
}

// "[2025-01-01 12:00:00] ", "[2025-01-01 12:00:00,123] ", SGLang's
// "[2025-01-01 12:00:00 DP0 TP3] ", torch_npu's "[2025-06-25 10:45:23:123] ".
size_t BracketTimePrefix(std::string_view s, LinePrefix* p) {
  if (s.size() < 22 || s[0] != '[') return 0;
  size_t i = DateTime(s.substr(1));
  if (i == 0) return 0;
  i += 1;
  LinePrefix got;
  while (i + 1 < s.size() && s[i] == ' ' && IsUpper(s[i + 1])) {
    size_t e = i + 1;
    while (e < s.size() && IsAlnum(s[e])) ++e;
    if (!GroupTag(s.substr(i + 1, e - i - 1), &got)) return 0;
    i = e;
  }
  if (i >= s.size() || s[i] != ']') return 0;
  if (got.tp >= 0) p->tp = got.tp;
  if (got.dp >= 0) p->dp = got.dp;
  if (got.pp >= 0) p->pp = got.pp;
  return i + 1 < s.size() && s[i + 1] == ' ' ? i + 2 : i + 1;
}

// Web log viewers: "18:11:06.680 ".
size_t ClockPrefix(std::string_view s) {
  if (s.size() < 14 || Digits(s, 0) != 2 || s[2] != ':' || Digits(s, 3) != 2 || s[5] != ':' || Digits(s, 6) != 2 ||
      s[8] != '.' || Digits(s, 9) != 3 || s[12] != ' ')
    return 0;
  return 13;
}

// docker compose: "vllm1-1  | ", "1469.worker.1  | " (the service's replica
// number is no rank).
size_t ComposePrefix(std::string_view s) {
  // The name first (most lines stop at once: "node01:", "[rank0]"), then
  // its replica number, spaces and the bar.
  size_t e = 0;
  while (e < s.size() && e < 96 && (IsAlnum(s[e]) || s[e] == '_' || s[e] == '.' || s[e] == '-')) ++e;
  size_t d = e;
  while (d > 0 && IsDigit(s[d - 1])) --d;
  if (d == e || d < 2 || (s[d - 1] != '-' && s[d - 1] != '_' && s[d - 1] != '.') || !IsAlnum(s[0])) return 0;
  size_t bar = e;
  while (bar < s.size() && s[bar] == ' ') ++bar;
  if (bar == e || bar >= s.size() || s[bar] != '|') return 0;
  size_t n = bar + 1;
  return n < s.size() && s[n] == ' ' ? n + 1 : n;
}

// A job runner's stream tag: "dinov2-giant-nodes.node04 [stderr] ".
size_t StreamTagPrefix(std::string_view s) {
  size_t sp = s.substr(0, 128).find(' ');
  if (sp == std::string_view::npos || sp == 0) return 0;
  std::string_view rest = s.substr(sp);
  for (std::string_view tag : {" [stderr] ", " [stdout] "}) {
    if (rest.substr(0, tag.size()) == tag) return sp + tag.size();
    if (rest == tag.substr(0, tag.size() - 1)) return s.size();  // an empty line of the stream
  }
  return 0;
}

// "[RANK 1] " (SimpleTuner's logger) and torch_npu's "[rank:2]:".
size_t NamedRankPrefix(std::string_view s, int64_t* rank) {
  for (std::string_view open : {std::string_view("[RANK "), std::string_view("[rank:")}) {
    if (s.substr(0, open.size()) != open) continue;
    size_t n = Digits(s, open.size());
    size_t close = open.size() + n;
    if (n == 0 || n > 7 || close >= s.size() || s[close] != ']') return 0;
    bool colon = open == "[rank:";
    if (close + 1 >= s.size() || s[close + 1] != (colon ? ':' : ' ')) return 0;
    int64_t r;
    if (!ParseDec(s.substr(open.size(), n), &r)) return 0;
    *rank = r;
    return close + 2;
  }
  return 0;
}

// pdsh: "node2: " for a host of the layout.
size_t HostPrefix(std::string_view s, const TextLayout& layout) {
  for (const std::string& h : layout.hosts)
    if (s.size() > h.size() + 1 && s.compare(0, h.size(), h) == 0 && s[h.size()] == ':' && s[h.size() + 1] == ' ')
      return h.size() + 2;
  return 0;
}

// Ray's deduplication suffix: " [repeated 12x across cluster]" and, on the
// first such line, " (Ray deduplicates logs by default. ...)". Returns the
// text without it and sets *times.
std::string_view StripRaySuffix(std::string_view s, int64_t* times) {
  if (s.empty() || (s.back() != ']' && s.back() != ')')) return s;
  size_t at = s.rfind(" [repeated ");
  if (at == std::string_view::npos) return s;
  std::string_view rest = s.substr(at + 11);
  size_t n = Digits(rest, 0);
  if (n == 0 || rest.substr(n, 16) != "x across cluster") return s;
  std::string_view tail = rest.substr(n + 16);
  if (tail.empty() || tail[0] != ']') return s;
  tail.remove_prefix(1);
  if (!tail.empty() && tail.substr(0, 6) != " (Ray ") return s;
  int64_t v = 0;
  if (ParseDec(rest.substr(0, n), &v)) *times = v;
  return s.substr(0, at);
}

// Host-name-like tokens of pdsh ("node2", "10.10.23.10", "worker-0"):
// not all digits (slurm), and with a digit, '-' or '.' (not "RuntimeError").
bool HostLike(std::string_view t) {
  if (t.empty() || t.size() > 63 || !IsAlnum(t[0])) return false;
  bool mark = false, all_digits = true;
  for (char c : t) {
    if (!(IsAlnum(c) || c == '-' || c == '.' || c == '_')) return false;
    mark = mark || IsDigit(c) || c == '-' || c == '.';
    all_digits = all_digits && IsDigit(c);
  }
  return mark && !all_digits;
}

}  // namespace

std::string_view CleanLine(std::string_view line, std::string* buf) {
  while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
  // memchr first: most lines hold neither byte.
  if (std::memchr(line.data(), '\r', line.size()) != nullptr) line.remove_prefix(line.rfind('\r') + 1);
  if (std::memchr(line.data(), '\x1b', line.size()) == nullptr) return line;
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

std::string_view PeelPrefixes(std::string_view text, const TextLayout& layout, LinePrefix* p) {
  p->before_tag = {};
  text = StripRaySuffix(text, &p->repeated);
  for (int round = 0; round < 8 && !text.empty(); ++round) {
    size_t n = KubectlPrefix(text);
    if (!n) n = MpiPrefix(text, &p->rank);
    if (!n) n = ParenPrefix(text, p);
    if (!n) n = BracketTimePrefix(text, p);
    if (!n) n = NamedRankPrefix(text, &p->rank);
    if (!n) n = ClockPrefix(text);
    if (!n) n = ComposePrefix(text);
    if (!n) n = StreamTagPrefix(text);
    if (!n && text.size() >= 2 && text[0] == '>' && text[1] == ' ') n = 2;  // markdown quote
    if (!n) n = HostPrefix(text, layout);
    bool ambiguous = false;
    if (!n) {
      int64_t bare = -1;
      n = BracketPrefix(text, &p->rank, &p->local_rank, &bare);
      ambiguous = n > 0 && text[n - 1] == ' ';  // "[3] ", not "[rank3]:"
      // MPICH -prepend-rank puts its "[3] " outermost; a later bare number
      // (torch_npu's "[pid] ") is none.
      if (ambiguous && layout.bracket_ranks && round == 0) p->rank = bare;
    }
    if (!n) ambiguous = (n = SlurmPrefix(text, &p->rank)) > 0;
    if (ambiguous) p->before_tag = text;
    if (!n) break;
    text.remove_prefix(n);
  }
  return text;
}

std::string_view PeelPrefixes(std::string_view text, int64_t* rank, int64_t* local_rank, std::string_view* before_tag) {
  static const TextLayout kNoLayout;
  LinePrefix p;
  p.rank = *rank;
  p.local_rank = *local_rank;
  std::string_view out = PeelPrefixes(text, kNoLayout, &p);
  *rank = p.rank;
  *local_rank = p.local_rank;
  if (before_tag) *before_tag = p.before_tag;
  return out;
}

std::string StartShape(std::string_view line) {
  std::string s(line.substr(0, 6));
  for (char& c : s)
    if (IsDigit(c)) c = '0';
  return s;
}

namespace {

constexpr size_t kLayoutHeadBytes = 1 << 20;
constexpr size_t kLayoutHeadLines = 20000;
constexpr size_t kMaxWrappedFileBytes = 16 << 20;
constexpr size_t kMinWrapWidth = 60;

// The head's physical lines (their '\r' dropped).
std::vector<std::string_view> HeadLines(std::string_view data) {
  std::vector<std::string_view> lines;
  std::string_view head = data.substr(0, kLayoutHeadBytes);
  for (size_t pos = 0; pos < head.size() && lines.size() < kLayoutHeadLines;) {
    size_t nl = head.find('\n', pos);
    if (nl == std::string_view::npos) nl = head.size();
    std::string_view l = head.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    pos = nl + 1;
  }
  return lines;
}

bool InBand(size_t len, size_t width) { return len >= width && len <= width + 2; }

// A separator drawn with one character ("=====", "-----", torchrun's
// failure summary, PyTorch's "*****" banner): a whole line by design, of
// one fixed width, never a terminal's cut of a longer one.
bool IsRule(std::string_view l) {
  if (l.size() < 8 || (l[0] != '=' && l[0] != '-' && l[0] != '*' && l[0] != '_' && l[0] != '#' && l[0] != '~'))
    return false;
  return l.find_first_not_of(l[0]) == std::string_view::npos;
}

// The wrap width of `lines` and the shapes lines start with, or 0.
// True when `line` is complete whatever its length: a header that ends in
// ':' (gdb's "Thread 4 (Thread 0x7f.. (LWP 21379) "pt_gloo_runloop"):", a
// traceback's first line), or when `next` starts a record of its own: a
// numbered frame ("#12 0x00007f.. in ...", gdb and eu-stack). The thread
// headers of one gdb dump have one length and are followed by "#0", a
// start no other line has: they read as a hard wrap, and the dump's frames
// were then joined into a few lines (the fresh-user tester's gdb_sleep).
bool EndsARecord(std::string_view line, std::string_view next) {
  if (!line.empty() && line.back() == ':') return true;
  if (next.size() < 3 || next[0] != '#') return false;
  size_t d = Digits(next, 1);
  return d > 0 && 1 + d < next.size() && next[1 + d] == ' ';
}

size_t DetectWrap(const std::vector<std::string_view>& lines, std::vector<std::string>* starts_out) {
  std::map<size_t, size_t> count;
  for (auto l : lines)
    if (l.size() >= kMinWrapWidth && !IsRule(l)) ++count[l.size()];
  size_t best = 0, best_evidence = 0;
  std::vector<std::string> best_starts;
  for (const auto& [width, n] : count) {
    if (n < 2) continue;
    // Lines after an unwrapped line are line starts; what follows a line of
    // the width and starts like none of them is a continuation.
    std::set<std::string> starts;
    for (size_t i = 0; i < lines.size(); ++i)
      if ((i == 0 || lines[i - 1].size() < width) && !Trim(lines[i]).empty()) starts.insert(StartShape(lines[i]));
    size_t band = 0, evidence = 0;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (!InBand(lines[i].size(), width) || IsRule(lines[i]) || EndsARecord(lines[i], lines[i + 1])) continue;
      ++band;
      // A next line that starts like this one is a line of its own: lines
      // of one message repeated by several processes have one width
      // ("(VllmWorker TP2 pid=407) INFO ... Parent process exited" x 7),
      // while a cut continues mid-text.
      std::string_view next = lines[i + 1];
      std::string shape = StartShape(next);
      if (!next.empty() && !IsSpace(next[0]) && !starts.count(shape) && shape != StartShape(lines[i])) ++evidence;
    }
    if (evidence >= 3 && evidence * 10 >= band * 6 && evidence >= best_evidence) {
      best = width, best_evidence = evidence;
      best_starts.assign(starts.begin(), starts.end());
    }
  }
  if (best) *starts_out = std::move(best_starts);
  return best;
}

// Bare "[N] " at the start of half the lines or more: a line counter when
// the numbers count up, MPICH ranks when they repeat.
void DetectBracketNumbers(const std::vector<std::string_view>& lines, TextLayout* layout) {
  std::vector<int64_t> values;
  size_t nonempty = 0;
  for (auto l : lines) {
    if (Trim(l).empty()) continue;
    ++nonempty;
    size_t n = l.size() > 2 && l[0] == '[' ? Digits(l, 1) : 0;
    int64_t v;
    if (n > 0 && n <= 9 && n + 2 < l.size() && l[n + 1] == ']' && l[n + 2] == ' ' && ParseDec(l.substr(1, n), &v))
      values.push_back(v);
  }
  if (values.size() < 3 || values.size() * 2 < nonempty) return;
  size_t up = 0;
  for (size_t i = 1; i < values.size(); ++i) up += values[i] > values[i - 1];
  std::set<int64_t> distinct(values.begin(), values.end());
  if (up * 10 >= (values.size() - 1) * 8)
    layout->numbered = true;
  else if (distinct.size() * 2 <= values.size())
    layout->bracket_ranks = true;
}

// pdsh "host: " tokens that together start 40% of the lines or more.
void DetectHosts(const std::vector<std::string_view>& lines, TextLayout* layout) {
  std::map<std::string_view, size_t> count;
  size_t nonempty = 0, hits = 0;
  for (auto l : lines) {
    if (Trim(l).empty()) continue;
    ++nonempty;
    size_t colon = l.substr(0, 64).find(": ");
    if (colon == std::string_view::npos || !HostLike(l.substr(0, colon))) continue;
    ++count[l.substr(0, colon)];
  }
  for (const auto& [host, n] : count)
    if (n >= 2) hits += n;
  if (hits < 2 || hits * 10 < nonempty * 4) return;
  for (const auto& [host, n] : count)
    if (n >= 2 && layout->hosts.size() < 256) layout->hosts.emplace_back(host);
}

// A relay tag (a runner's "name [stderr] ", docker compose's "svc-1  | ")
// on 40% of the lines or more: the relay tags every line it passes on.
bool DetectRelayTagged(const std::vector<std::string_view>& lines) {
  size_t nonempty = 0, tagged = 0;
  for (auto l : lines) {
    if (Trim(l).empty()) continue;
    ++nonempty;
    tagged += StreamTagPrefix(l) > 0 || ComposePrefix(l) > 0;
  }
  return tagged >= 3 && tagged * 10 >= nonempty * 4;
}

}  // namespace

TextLayout DetectLayout(std::string_view data) {
  TextLayout layout;
  std::vector<std::string_view> lines = HeadLines(data);
  if (data.size() <= kMaxWrappedFileBytes) {
    layout.wrap_width = DetectWrap(lines, &layout.start_shapes);
    layout.relay_tagged = DetectRelayTagged(lines);
  }
  DetectBracketNumbers(lines, &layout);
  DetectHosts(lines, &layout);
  return layout;
}

LineReader::LineReader(std::string_view data) : data_(data) {
  // The text formats read one file in turn on one thread: detect its
  // layout once. Keyed by the buffer and a hash of its head (another file
  // may reuse the address).
  struct Last {
    const char* data = nullptr;
    size_t size = 0, head_hash = 0;
    TextLayout layout;
  };
  thread_local Last last;
  size_t hash = std::hash<std::string_view>()(data.substr(0, 4096));
  if (last.data != data.data() || last.size != data.size() || last.head_hash != hash) {
    last.layout = DetectLayout(data);
    last.data = data.data(), last.size = data.size(), last.head_hash = hash;
  }
  layout_ = last.layout;
}

bool LineReader::Physical(std::string_view* raw, size_t* start) {
  if (pos_ >= data_.size()) return false;
  size_t nl = data_.find('\n', pos_);
  size_t end = nl == std::string_view::npos ? data_.size() : nl;
  *start = pos_;
  if (pos_ - released_ >= kReleaseEvery) {
    // What is behind this line was read: a 10 GB log must not stay resident.
    ReleaseReadPages(data_.substr(released_, pos_ - released_));
    released_ = pos_;
  }
  *raw = data_.substr(pos_, end - pos_);
  if (!raw->empty() && raw->back() == '\r') raw->remove_suffix(1);
  pos_ = nl == std::string_view::npos ? data_.size() : nl + 1;
  ++number_;
  return true;
}

bool LineReader::Continues(std::string_view prev, std::string_view next) const {
  if (next.empty() || IsSpace(next[0])) return false;
  // A relay tags every line it passes on: an untagged line after a long one
  // is the rest of it.
  if (layout_.relay_tagged && prev.size() >= kMinWrapWidth && StreamTagPrefix(next) == 0 && ComposePrefix(next) == 0)
    return true;
  size_t width = layout_.wrap_width;
  if (width == 0 || prev.size() < width || IsRule(prev) || EndsARecord(prev, next)) return false;
  std::string shape = StartShape(next);
  for (const auto& s : layout_.start_shapes)
    if (s == shape) return false;
  return true;
}

bool LineReader::Next(Line* line) {
  std::string_view raw;
  size_t start = 0;
  if (!Physical(&raw, &start)) return false;
  line->offset = static_cast<int64_t>(start);
  line->number = number_;
  line->joined = 1;
  if (layout_.wrap_width > 0 || layout_.relay_tagged) {
    // Join the continuations of a hard-wrapped line: a cut at the width
    // joins as is (it may fall inside a word), a longer line that a runner
    // broke at a word joins with a space.
    std::string_view last = raw;
    bool joining = false;
    while (pos_ < data_.size() && line->joined < 64) {
      size_t save_pos = pos_;
      int64_t save_number = number_;
      std::string_view next;
      size_t next_start;
      if (!Physical(&next, &next_start) || !Continues(last, next)) {
        pos_ = save_pos, number_ = save_number;
        break;
      }
      if (!joining) joined_.assign(raw.data(), raw.size()), joining = true;
      bool cut = layout_.wrap_width > 0 && InBand(last.size(), layout_.wrap_width);
      if (!cut && !joined_.empty() && joined_.back() != ' ') joined_ += ' ';
      joined_.append(next.data(), next.size());
      last = next;
      ++line->joined;
    }
    if (joining) raw = joined_;
  }
  line->truncated = raw.size() > kMaxLineBytes;
  if (line->truncated) {
    raw = raw.substr(0, kMaxLineBytes);
    ++truncated_;
  }
  LinePrefix p;
  std::string_view t = CleanLine(raw, &buf_);
  line->text = PeelPrefixes(t, layout_, &p);
  line->rank = p.rank;
  line->local_rank = p.local_rank;
  line->tp = p.tp, line->dp = p.dp, line->pp = p.pp;
  line->pid = p.pid;
  line->repeated = p.repeated;
  line->before_tag = p.before_tag;
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

bool Contains(std::string_view s, std::string_view needle) {
  constexpr size_t kChunk = size_t{32} << 20;
  if (s.size() <= 2 * kChunk || needle.size() > kChunk) return s.find(needle) != std::string_view::npos;
  // A whole file (a sniffer's search): in chunks overlapping by the needle,
  // each released once searched (ReleaseReadPages), so that a search that
  // finds nothing in a 10 GB log does not leave it all resident.
  for (size_t at = 0; at < s.size(); at += kChunk) {
    std::string_view chunk = s.substr(at, kChunk + needle.size() - 1);
    bool found = chunk.find(needle) != std::string_view::npos;
    ReleaseReadPages(s.substr(at, kChunk));
    if (found) return true;
  }
  return false;
}

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

namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's
// days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The `n` digits at s[i..] as a number; -1 when they are not all digits.
int64_t Digits(std::string_view s, size_t i, size_t n) {
  if (i + n > s.size()) return -1;
  int64_t v = 0;
  for (size_t k = i; k < i + n; ++k) {
    if (s[k] < '0' || s[k] > '9') return -1;
    v = v * 10 + (s[k] - '0');
  }
  return v;
}

// The ISO-8601 stamp that starts at s[i] (see LineTimeNs), or 0.
int64_t StampAt(std::string_view s, size_t i) {
  int64_t y = Digits(s, i, 4), mo = Digits(s, i + 5, 2), d = Digits(s, i + 8, 2);
  if (y < 1970 || y > 2200 || s[i + 4] != '-' || s[i + 7] != '-' || mo < 1 || mo > 12 || d < 1 || d > 31) return 0;
  if (i + 19 > s.size() || (s[i + 10] != ' ' && s[i + 10] != 'T') || s[i + 13] != ':' || s[i + 16] != ':') return 0;
  int64_t h = Digits(s, i + 11, 2), mi = Digits(s, i + 14, 2), sec = Digits(s, i + 17, 2);
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) return 0;
  int64_t ns = ((DaysFromCivil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
  ns *= 1000000000;
  size_t k = i + 19;
  if (k < s.size() && (s[k] == '.' || s[k] == ',')) {
    int64_t scale = 100000000;
    for (++k; k < s.size() && s[k] >= '0' && s[k] <= '9'; ++k, scale /= 10) ns += (s[k] - '0') * scale;
  }
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) {
    int64_t oh = Digits(s, k + 1, 2), om = Digits(s, k + 4, 2);
    if (oh >= 0 && oh <= 14 && k + 3 < s.size() && s[k + 3] == ':' && om >= 0 && om < 60)
      ns -= (s[k] == '+' ? 1 : -1) * (oh * 60 + om) * 60 * int64_t{1000000000};
  }
  return ns;
}

}  // namespace

int64_t LineTimeNs(std::string_view raw) {
  std::string_view head = raw.substr(0, 96);
  for (size_t i = 0; i + 19 <= head.size(); ++i) {
    if (head[i] < '1' || head[i] > '2' || (i > 0 && head[i - 1] >= '0' && head[i - 1] <= '9')) continue;
    if (int64_t ns = StampAt(head, i)) return ns;
  }
  return 0;
}

bool LooksBinary(std::string_view data) {
  std::string_view head = data.substr(0, 4096);
  if (head.find('\0') != std::string_view::npos) return true;
  size_t odd = 0;
  for (unsigned char c : head)
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\x1b' && c != '\f') ++odd;
  return !head.empty() && odd * 10 > head.size();
}

namespace {

// True when `data` holds a NUL byte; searched in chunks, each released
// once searched (ReleaseReadPages: the search reads the whole file).
bool HasNul(std::string_view data) {
  constexpr size_t kChunk = size_t{32} << 20;
  for (size_t at = 0; at < data.size(); at += kChunk) {
    std::string_view chunk = data.substr(at, kChunk);
    bool nul = std::memchr(chunk.data(), 0, chunk.size()) != nullptr;
    if (data.size() > 2 * kChunk) ReleaseReadPages(chunk);
    if (nul) return true;
  }
  return false;
}

}  // namespace

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
    if (!HasNul(data)) return TextEncoding::kText;
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

int64_t MembersBySizes(std::string_view op, int64_t numel_in, int64_t numel_out) {
  auto ratio = [](int64_t whole, int64_t part) -> int64_t {
    return part > 0 && whole > part && whole % part == 0 && whole / part < model::kMaxRank ? whole / part : 0;
  };
  if (op == "all_gather" || op == "_allgather_base" || op == "all_gather_into_tensor" || op == "gather")
    return ratio(numel_out, numel_in);
  if (op == "reduce_scatter" || op == "_reduce_scatter_base" || op == "reduce_scatter_tensor")
    return ratio(numel_in, numel_out);
  return 0;
}

}  // namespace hangdx::ingest::logs
