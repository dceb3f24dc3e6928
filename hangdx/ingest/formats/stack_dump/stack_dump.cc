#include "hangdx/ingest/formats/stack_dump/stack_dump.h"

#include <re2/re2.h>

#include <map>
#include <nlohmann/json.hpp>

#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using logs::Contains;
using logs::Line;
using logs::LineReader;
using logs::ParseDec;
using logs::ParseDecPrefix;
using logs::Trim;

using Sev = model::Diagnostic::Severity;
constexpr size_t kMaxFrames = 1024;
constexpr size_t kMaxStacks = 20000;

const RE2& PySpyThread() {
  // The id is left out by some posters ("Thread (active): "MainThread"").
  static const RE2 re(R"re(^Thread (?:(0x[0-9A-Fa-f]+|\d+) )?\((idle|active|active\+gil)\)(?::\s*"(.*)")?\s*$)re");
  return re;
}
const RE2& GdbThread() {
  static const RE2 re(
      R"re(^Thread (\d+) \((?:Thread )?(0x[0-9a-fA-F]+)(?: \(LWP (\d+)\))?(?: "([^"]*)")?\)\)?:?\s*$)re");
  return re;
}
const RE2& FaultThread() {
  static const RE2 re(
      R"re(^(?:Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[[^\]]*\])? \(most recent call first\):\s*$)re");
  return re;
}
const RE2& PyFrameLine() {
  // faulthandler: `File "x", line 3 in f`; python-gdb/traceback: `File "x", line 3, in f`.
  static const RE2 re(R"re(^\s*File "([^"]*)", line (\d+),? in (.*)$)re");
  return re;
}

// lldb `bt` / `thread backtrace all`: `* thread #1, name = 'python', stop
// reason = signal SIGSTOP`, then `frame #2: 0x00007fb0 libtorch_cuda.so`sym(args) + 725 at f.cc:217:18`
// (lldb's default frame-format; lldb/source/Core/FormatEntity.cpp).
const RE2& LldbThread() {
  static const RE2 re(R"re(^\s*\*?\s*thread #\d+(?:, .*)?$)re");
  return re;
}
const RE2& LldbFrame() {
  static const RE2 re(R"re(^\s*\*?\s*frame #\d+: 0x[0-9a-fA-F]+ (.*)$)re");
  return re;
}

bool IsIdentLine(std::string_view t) {
  if (t.empty() || t.size() > 200) return false;
  for (char c : t)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '<' || c == '>')) return false;
  return !isdigit(static_cast<unsigned char>(t[0]));
}

bool NamesDistributedCall(std::string_view name) {
  for (std::string_view k :
       {"all_reduce", "broadcast", "barrier", "all_gather", "reduce_scatter", "all_to_all", "allreduce", "allgather",
        "gather", "scatter", "send", "recv", "wait", "monitored_barrier", "broadcast_object_list", "all_gather_object"})
    if (name == k) return true;
  return false;
}

// Hands finished stack samples to the sink, at most kMaxStacks per rank.
class StackWriter {
 public:
  explicit StackWriter(RecordSink* out) : out_(out) {}
  // An empty sample of thread `thread` starting at 1-based line `line`.
  model::StackSample New(std::string thread, int64_t line) const {
    model::StackSample s;
    s.thread = std::move(thread);
    s.file = out_->file();
    s.line = line;
    return s;
  }
  // Adds *s to `rank`'s stacks and leaves *s without frames.
  void Push(int64_t rank, model::StackSample* s) {
    out_->NoteRank(rank);
    if (count_[rank]++ < kMaxStacks) out_->AddStack(rank, std::move(*s));
    s->frames.clear();
    s->frames_dropped = 0;
  }
  // True when some sample went to rank -1 (no rank known).
  bool any_unranked() const { return count_.count(-1) != 0; }

 private:
  RecordSink* out_;
  std::map<int64_t, size_t> count_;  // per rank: samples pushed
};

void ParseJson(std::string_view data, int64_t rank_hint, RecordSink* out) {
  StackWriter w(out);
  nlohmann::json j = nlohmann::json::parse(data.begin(), data.end(), nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    out->Diag(Sev::kError, "py-spy JSON dump is not valid JSON (truncated?)", rank_hint);
    return;
  }
  for (const auto& t : j) {
    if (!t.is_object()) continue;
    std::string thread;
    auto num = [](const nlohmann::json& v) {
      return v.is_number_integer() ? std::to_string(v.get<int64_t>())
                                   : (v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::string());
    };
    if (t.contains("os_thread_id")) thread = num(t["os_thread_id"]);
    if (thread.empty() && t.contains("thread_id")) thread = num(t["thread_id"]);
    bool active = t.value("active", false) == true;
    bool gil = t.value("owns_gil", false) == true;
    thread += active ? (gil ? " (active+gil)" : " (active)") : " (idle)";
    if (t.contains("thread_name") && t["thread_name"].is_string())
      thread += ": \"" + t["thread_name"].get<std::string>() + "\"";
    model::StackSample s = w.New("Thread " + thread, -1);
    if (t.contains("frames") && t["frames"].is_array()) {
      for (const auto& f : t["frames"]) {
        if (!f.is_object()) continue;
        if (s.frames.size() >= kMaxFrames) {
          ++s.frames_dropped;
          continue;
        }
        model::Frame fr;
        if (f.contains("name") && f["name"].is_string()) fr.name = f["name"].get<std::string>();
        if (f.contains("short_filename") && f["short_filename"].is_string())
          fr.filename = f["short_filename"].get<std::string>();
        else if (f.contains("filename") && f["filename"].is_string())
          fr.filename = f["filename"].get<std::string>();
        if (f.contains("line") && f["line"].is_number_integer()) fr.line = f["line"].get<int64_t>();
        s.frames.push_back(std::move(fr));
      }
    }
    w.Push(rank_hint, &s);
  }
}

}  // namespace

bool ParsePySpyFrame(std::string_view t, model::Frame* f) {
  t = Trim(t);
  if (t.empty()) return false;
  *f = model::Frame{};
  if (t.back() == ')') {
    size_t open = t.rfind(" (");
    if (open != std::string_view::npos) {
      std::string_view loc = t.substr(open + 2, t.size() - open - 3);
      f->name = std::string(t.substr(0, open));
      size_t colon = loc.rfind(':');
      int64_t line;
      if (colon != std::string_view::npos && ParseDec(loc.substr(colon + 1), &line)) {
        f->filename = std::string(loc.substr(0, colon));
        f->line = line;
      } else {
        f->filename = std::string(loc);
      }
      return true;
    }
  }
  f->name = std::string(t);
  return true;
}

bool ParseGdbFrame(std::string_view t, model::Frame* f) {
  t = Trim(t);
  if (t.size() < 2 || t[0] != '#' || !isdigit(static_cast<unsigned char>(t[1]))) return false;
  size_t i = 1;
  while (i < t.size() && isdigit(static_cast<unsigned char>(t[i]))) ++i;
  t = Trim(t.substr(i));
  if (t.substr(0, 2) == "0x") {
    size_t in = t.find(" in ");
    if (in != std::string_view::npos) t = t.substr(in + 4);
  }
  *f = model::Frame{};
  size_t paren = t.find(" (");
  f->name = std::string(paren == std::string_view::npos ? t : t.substr(0, paren));
  if (paren == std::string_view::npos) return true;
  // Skip the balanced argument list, then " at file:line" or " from lib".
  int depth = 0;
  size_t j = paren + 1;
  for (; j < t.size(); ++j) {
    if (t[j] == '(')
      ++depth;
    else if (t[j] == ')' && --depth == 0)
      break;
  }
  std::string_view rest = j < t.size() ? t.substr(j + 1) : std::string_view();
  size_t at = rest.rfind(" at ");
  size_t from = rest.rfind(" from ");
  if (at != std::string_view::npos) {
    std::string_view loc = Trim(rest.substr(at + 4));
    size_t colon = loc.rfind(':');
    int64_t line;
    if (colon != std::string_view::npos && ParseDec(loc.substr(colon + 1), &line)) {
      f->filename = std::string(loc.substr(0, colon));
      f->line = line;
    } else {
      f->filename = std::string(loc);
    }
  } else if (from != std::string_view::npos) {
    f->filename = std::string(Trim(rest.substr(from + 6)));
  }
  return true;
}

bool ParseLldbFrame(std::string_view t, model::Frame* f) {
  re2::StringPiece rest_sp;
  if (!RE2::FullMatch(re2::StringPiece(t.data(), t.size()), LldbFrame(), &rest_sp)) return false;
  std::string_view rest(rest_sp.data(), rest_sp.size());
  *f = model::Frame{};
  size_t tick = rest.find('`');
  std::string_view module = tick == std::string_view::npos ? std::string_view() : rest.substr(0, tick);
  std::string_view sym = tick == std::string_view::npos ? rest : rest.substr(tick + 1);
  size_t at = sym.rfind(" at ");
  if (at != std::string_view::npos) {
    // file:line[:column]
    std::string_view loc = Trim(sym.substr(at + 4));
    sym = sym.substr(0, at);
    size_t c1 = loc.find(':');
    int64_t line = 0;
    f->filename = std::string(loc.substr(0, c1));
    if (c1 != std::string_view::npos) ParseDecPrefix(loc.substr(c1 + 1), &line);
    f->line = line;
  } else {
    f->filename = std::string(module);
  }
  size_t plus = sym.rfind(" + ");
  if (plus != std::string_view::npos) sym = sym.substr(0, plus);
  size_t paren = sym.find('(');
  if (paren != std::string_view::npos && paren > 0) sym = sym.substr(0, paren);
  f->name = std::string(Trim(sym));
  return true;
}

StackFormat SniffStackFormat(std::string_view data) {
  std::string_view head = Trim(data.substr(0, 1 << 16));
  if (!head.empty() && head[0] == '[' && Contains(head, "\"thread_id\"") && Contains(head, "\"frames\""))
    return StackFormat::kPySpyJson;
  bool pyspy = false, gdb = false, fault = false, bare = true, lldb_thread = false, lldb_frame = false;
  int lines = 0, calls = 0, located = 0;
  int64_t last_frame = -1;  // a headerless gdb backtrace: #0, #1, ... in a row
  LineReader r(data);
  for (Line l; r.Next(&l) && l.number <= 4000;) {
    std::string_view t = l.text;
    if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), GdbThread()) && Contains(t, "(Thread "))
      gdb = true;
    else if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), PySpyThread()))
      pyspy = true;
    else if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), FaultThread()) ||
             Trim(t) == "Traceback (most recent call first):")
      fault = true;
    else if (t.substr(0, 8) == "Process " && Contains(t.substr(0, 24), ": ")) {
      int64_t pid;
      size_t c = t.find(':');
      if (ParseDec(t.substr(8, c - 8), &pid)) pyspy = true;
    } else if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), LldbThread())) {
      lldb_thread = true;
    } else if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), LldbFrame())) {
      lldb_frame = true;
    }
    model::Frame gf;
    int64_t n;
    std::string_view tn = Trim(t);
    if (tn.size() > 1 && tn[0] == '#' && ParseDecPrefix(tn.substr(1), &n) && ParseGdbFrame(tn, &gf)) {
      if (n == 0 || n == last_frame + 1)
        last_frame = n;
      else
        last_frame = -1;
      if (last_frame >= 1) gdb = true;
    }
    if (bare && !Trim(t).empty()) {
      model::Frame f;
      std::string_view tt = Trim(t);
      bool frame_like = IsIdentLine(tt) || (tt.back() == ')' && tt.find(" (") != std::string_view::npos &&
                                            IsIdentLine(tt.substr(0, tt.find(" ("))));
      if (!frame_like || ++lines > 512)
        bare = false;
      else if (ParsePySpyFrame(tt, &f) && NamesDistributedCall(f.name))
        ++calls;
      if (ParsePySpyFrame(tt, &f) && f.line > 0) ++located;
    }
  }
  if (gdb) return StackFormat::kGdb;
  if (lldb_thread && lldb_frame) return StackFormat::kLldb;
  if (pyspy) return StackFormat::kPySpy;
  if (fault) return StackFormat::kFaulthandler;
  if (bare && lines >= 1 && (calls > 0 || (lines >= 2 && located == lines))) return StackFormat::kBareFrames;
  return StackFormat::kNone;
}

int SniffStackDump(std::string_view data) { return SniffStackFormat(data) != StackFormat::kNone ? 50 : 0; }

bool ParseStackDump(const Artifact& in, RecordSink* out) {
  ParseStackDumpAs(in, SniffStackFormat(in.data), out);
  return true;
}

void ParseStackDumpAs(const Artifact& in, StackFormat f, RecordSink* out) {
  std::string_view data = in.data;
  const int64_t rank_hint = in.rank_hint;
  if (f == StackFormat::kNone) return;
  if (f == StackFormat::kPySpyJson) {
    ParseJson(data, rank_hint, out);
    return;
  }
  StackWriter w(out);
  int64_t rank = rank_hint;
  bool open = false;
  model::StackSample s;
  size_t frame_indent = std::string_view::npos;  // py-spy: indent of frame lines (locals are deeper)
  auto flush = [&] {
    if (open) w.Push(rank, &s);
    open = false;
  };
  // A Python frame line ('File "x.py", line 3 in f'), as py-bt and
  // faulthandler print them.
  auto add_py_frame = [&](const re2::StringPiece& line_text) {
    std::string file, func;
    int64_t line = 0;
    if (!RE2::FullMatch(line_text, PyFrameLine(), &file, &line, &func)) return;
    if (s.frames.size() < kMaxFrames)
      s.frames.push_back({std::string(Trim(func)), file, line});
    else
      ++s.frames_dropped;
  };
  if (f == StackFormat::kBareFrames) {
    s = w.New("", 1);
    open = true;
  }
  LineReader reader(data);
  for (Line l; reader.Next(&l);) {
    if (l.rank >= 0 && l.rank != rank) {
      flush();
      rank = l.rank;
    }
    std::string_view t = l.text;
    std::string_view tt = Trim(t);
    if (tt.empty()) continue;
    re2::StringPiece sp(t.data(), t.size());
    switch (f) {
      case StackFormat::kPySpy:
      case StackFormat::kBareFrames: {
        if (RE2::FullMatch(sp, PySpyThread())) {
          flush();
          s = w.New(std::string(tt), l.number);
          open = true;
          frame_indent = std::string_view::npos;
          continue;
        }
        if (f == StackFormat::kPySpy && !open) continue;  // Process / Python v... header lines
        size_t ind = 0;
        while (ind < t.size() && (t[ind] == ' ' || t[ind] == '\t')) ++ind;
        if (f == StackFormat::kPySpy) {
          if (ind == 0) {  // a non-indented line ends the thread (e.g. the next Process)
            flush();
            continue;
          }
          if (frame_indent == std::string_view::npos) frame_indent = ind;
          if (ind > frame_indent) continue;  // --locals: Arguments:/Locals: and their values
          if (tt == "Arguments:" || tt == "Arguments::" || tt == "Locals:") continue;
        }
        model::Frame fr;
        if (ParsePySpyFrame(tt, &fr)) {
          if (s.frames.size() < kMaxFrames)
            s.frames.push_back(std::move(fr));
          else
            ++s.frames_dropped;
        }
        break;
      }
      case StackFormat::kGdb: {
        std::string n, ptr, lwp, name;
        if (RE2::FullMatch(sp, GdbThread(), &n, &ptr, &lwp, &name)) {
          flush();
          s = w.New(std::string(tt), l.number);
          open = true;
          continue;
        }
        model::Frame fr;
        bool frame_line = ParseGdbFrame(tt, &fr);
        // A backtrace pasted without its thread header (gdb `where`,
        // eu-stack): #0 opens a stack, and a later #0 opens the next.
        int64_t number = -1;
        if (frame_line) ParseDecPrefix(tt.substr(1), &number);
        if (number == 0 && (!open || !s.frames.empty())) {
          flush();
          s = w.New("", l.number);
          open = true;
        }
        if (open && frame_line) {
          if (s.frames.size() < kMaxFrames) {
            s.frames.push_back(std::move(fr));
            continue;
          }
          ++s.frames_dropped;
        }
        // python-gdb py-bt frames under a gdb thread header.
        if (open) add_py_frame(sp);
        break;
      }
      case StackFormat::kLldb: {
        if (RE2::FullMatch(sp, LldbThread())) {
          flush();
          s = w.New(std::string(Trim(tt.substr(tt[0] == '*' ? 1 : 0))), l.number);
          open = true;
          continue;
        }
        model::Frame fr;
        if (open && ParseLldbFrame(t, &fr)) {
          if (s.frames.size() < kMaxFrames)
            s.frames.push_back(std::move(fr));
          else
            ++s.frames_dropped;
        }
        break;
      }
      case StackFormat::kFaulthandler: {
        if (RE2::FullMatch(sp, FaultThread()) || tt == "Traceback (most recent call first):") {
          flush();
          s = w.New(std::string(tt.substr(0, tt.find(" (most recent"))), l.number);
          open = true;
          continue;
        }
        if (open) add_py_frame(sp);
        break;
      }
      default:
        break;
    }
  }
  flush();
  if (rank < 0 && w.any_unranked())
    out->Diag(Sev::kWarning, "stack dump names no rank and its file name ends in no number; pass --rank FILE=RANK");
}

}  // namespace hangdx::ingest
