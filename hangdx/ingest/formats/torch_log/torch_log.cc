#include "hangdx/ingest/formats/torch_log/torch_log.h"

#include <re2/re2.h>

#include <map>
#include <set>
#include <tuple>

#include "hangdx/base/rank_set.h"
#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using logs::Between;
using logs::Contains;
using logs::Line;
using logs::LineReader;
using logs::ParseDec;
using logs::ParseDecPrefix;
using logs::Trim;

using Sev = model::Diagnostic::Severity;
using Kind = model::LogEvent::Kind;

// `[PG ID 0 PG GUID 0(default_pg) Rank 1]`, `[PG 2 Rank 3]`, `[Rank 0]` (spec 3.2).
struct PgPrefix {
  bool found = false;
  std::string id, guid, desc;
  int64_t rank = -1;  // rank within that pg
  std::string Name() const { return !guid.empty() ? guid : id; }
  bool IsDefault() const { return Name().empty() || Name() == "0" || desc == "default_pg"; }
};

PgPrefix FindPgPrefix(std::string_view t) {
  static const RE2 kPg(R"re(\[(?:PG (?:ID )?(\d+) (?:PG GUID ([^\s(\]]+))?\s?(?:\(([^)]*)\) ?)?)?Rank (\d+)\])re");
  PgPrefix p;
  if (RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), kPg, &p.id, &p.guid, &p.desc, &p.rank)) p.found = true;
  return p;
}

struct Timeout {
  int64_t global = -1;   // from [rankN]:
  int64_t pg_rank = -1;  // from [... Rank N]
  PgPrefix pg;           // pg.found false: the line names no pg
  std::string backend, op_type;
  int64_t seq = -1, numel_in = -1, numel_out = -1, timeout_ms = -1, ran_ms = -1;
  std::string message;
  int64_t line = 0, offset = 0;
};

struct Status {
  int64_t global = -1, pg_rank = -1;
  PgPrefix pg;
  int64_t seq = -1, enqueued = -1, completed = -1;
};

struct Fingerprint {
  bool ok = false;
  int64_t seq = -1;
  std::string op_type;
  model::Shape shape;
  bool has_shape = false;
  std::string dtype;
  std::string device;
};

// Parses the inside of CollectiveFingerPrint(...): fields read by name.
Fingerprint ParseFingerprint(std::string_view s) {
  Fingerprint f;
  size_t p = s.find("SequenceNumber=");
  if (p != std::string_view::npos) {
    size_t used = 0;
    if (ParseDecPrefix(s.substr(p + 15), &f.seq, &used) && used > 0 && f.seq >= 0 && f.seq < INT64_MAX) f.ok = true;
  }
  p = s.find("OpType=");
  if (p != std::string_view::npos) {
    size_t e = p + 7;
    while (e < s.size() && (isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    f.op_type = std::string(s.substr(p + 7, e - p - 7));
  }
  bool found = false;
  std::string_view shape = Between(s, "TensorShape=[", "]", &found);
  if (found) {
    f.has_shape = true;
    while (!shape.empty()) {
      size_t c = shape.find(',');
      int64_t v;
      if (ParseDec(Trim(shape.substr(0, c)), &v)) f.shape.push_back(v);
      if (c == std::string_view::npos) break;
      shape.remove_prefix(c + 1);
    }
  }
  p = s.find("TensorDtypes=");
  if (p != std::string_view::npos) {
    size_t b = p + 13;
    if (b < s.size() && s[b] == '[') ++b;
    size_t e = b;
    while (e < s.size() && (isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    f.dtype = std::string(s.substr(b, e - b));
  }
  if (Contains(s, "device=cuda"))
    f.device = "cuda";
  else if (Contains(s, "device=cpu"))
    f.device = "cpu";
  return f;
}

// True when the other rank's fingerprint of a DETAIL mismatch line is not
// its fingerprint but the length of it, decoded as one: ProcessGroupWrapper
// all-gathers the length of every rank's serialized fingerprint first, and
// when a length differs (another number of tensors or of dimensions) it
// prints that one-element tensor through deserialize_fingerprint: sequence
// number 0, OpType the enum value equal to the length (7: GATHER, 8:
// SCATTER), no tensors ("CollectiveFingerPrint(SequenceNumber=0OpType=SCATTER)",
// torch 2.13, testdata/torch/detail_shape_rank). Only the reporter's own
// fingerprint is then true; the other rank differs in what it runs, and
// what that is the line does not say. A real fingerprint of seq 0 next to
// one of a later seq cannot occur: the check is itself a collective, run in
// step on every rank.
bool IsLengthDecode(const Fingerprint& own, const Fingerprint& other) {
  return own.ok && own.seq > 0 && other.ok && other.seq == 0 && !other.has_shape && other.dtype.empty();
}

// A traceback frame line, `  File "x.py", line 3, in f` (CPython
// Python/traceback.c): indent, file, line, function.
const RE2& FileLine() {
  static const RE2 re("^(\\s*)File \"([^\"]*)\", line (\\d+), in (.*)$");
  return re;
}

bool IsCrashText(std::string_view m) {
  for (std::string_view k :
       {"CUDA error", "illegal memory access", "Segmentation fault", "SIGSEGV", "SIGABRT", "Fatal Python error",
        "NCCL error", "ncclUnhandledCudaError", "ncclInternalError", "ncclSystemError", "CUBLAS_STATUS",
        "CUDA out of memory", "device-side assert", "OutOfMemoryError"})
    if (Contains(m, k)) return true;
  return false;
}

// The signal of CPython's faulthandler report "Fatal Python error:
// Segmentation fault" (Modules/faulthandler.c, faulthandler_fatal_error:
// "Fatal Python error: " + the name in faulthandler_handlers[]: SIGSEGV
// "Segmentation fault", SIGBUS "Bus error", SIGILL "Illegal instruction",
// SIGFPE "Floating point exception" ("Floating-point exception" in recent
// releases), SIGABRT "Aborted"), -1 for other lines.
// The report ends the process by that signal (faulthandler re-raises it).
int64_t FaulthandlerSignal(std::string_view t) {
  size_t at = t.find("Fatal Python error: ");
  if (at == std::string_view::npos) return -1;
  std::string_view name = Trim(t.substr(at + 20));
  static constexpr std::pair<std::string_view, int64_t> kNames[] = {{"Segmentation fault", 11},
                                                                     {"Bus error", 7},
                                                                     {"Illegal instruction", 4},
                                                                     {"Floating point exception", 8},
                                                                     {"Floating-point exception", 8},
                                                                     {"Aborted", 6}};
  for (const auto& [n, sig] : kNames)
    if (name == n) return sig;
  return -1;
}

bool IsConsequenceText(std::string_view m) {
  for (std::string_view k :
       {"Watchdog caught", "timed out", "Timed out", "DistBackendError", "communicator was aborted",
        "Connection reset by peer", "Connection closed by peer", "failed to pass monitoredBarrier",
        // A non-zero rank of a monitored barrier whose exchange with rank 0
        // failed (ProcessGroupGloo::monitoredBarrier, 1.9-2.13): rank 0's
        // verdict names the culprit; under TORCH_DISTRIBUTED_DEBUG=DETAIL
        // every timeout goes through it (the fresh-user tester's mon_barrier).
        "successfully reached monitoredBarrier, but received errors",
        "Timeout at NCCL work", "Detected mismatch between collectives"})
    if (Contains(m, k)) return true;
  return false;
}

}  // namespace

std::string TorchOpName(std::string_view t) {
  static const std::map<std::string_view, std::string_view> kMap = {
      {"BROADCAST", "broadcast"},
      {"ALLREDUCE", "all_reduce"},
      {"ALLREDUCE_COALESCED", "allreduce_coalesced"},
      {"REDUCE", "reduce"},
      {"ALLGATHER", "all_gather"},
      {"_ALLGATHER_BASE", "_allgather_base"},
      {"ALLGATHER_COALESCED", "allgather_coalesced"},
      {"GATHER", "gather"},
      {"SCATTER", "scatter"},
      {"REDUCE_SCATTER", "reduce_scatter"},
      {"_REDUCE_SCATTER_BASE", "_reduce_scatter_base"},
      {"REDUCE_SCATTER_TENSOR_COALESCED", "reduce_scatter_tensor_coalesced"},
      {"ALLTOALL_BASE", "all_to_all_single"},
      {"ALLTOALL", "all_to_all"},
      {"SEND", "send"},
      {"RECV", "recv"},
      {"RECVANYSOURCE", "recv_any_source"},
      {"BARRIER", "barrier"},
      {"COALESCED", "coalesced"},
      {"_ALLREDUCE_SPARSE", "_allreduce_sparse"},
  };
  auto it = kMap.find(t);
  if (it != kMap.end()) return std::string(it->second);
  std::string s(t);
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

int SniffTorchLog(std::string_view data) {
  for (std::string_view k : {"ProcessGroupNCCL.cpp:", "Watchdog caught", "CollectiveFingerPrint(",
                             "Detected mismatch between collectives", "ProcessGroupWrapper", "failed (exitcode:",
                             "Traceback (most recent call last):", "ProcessGroupGloo.cpp:", "ProcessGroupHCCL.cpp:",
                             "Fatal Python error: "})
    if (Contains(data, k)) return 50;
  return 0;
}

namespace {

// One pass over c10d text: a handler per kind of line (traceback frames,
// watchdog timeouts, PG status lines, DETAIL mismatches and fingerprints,
// crashes and exits) collects what the lines say; Finish() writes the
// fingerprints, timeouts and pg statuses, which need lines read later.
// The pg of a DETAIL mismatch reported inside a sub-group: the line names
// no pg, and under DETAIL the Flight Recorder records none either.
constexpr std::string_view kUnknownSubGroup = "?";

class TorchLogReader {
 public:
  TorchLogReader(const Artifact& in, RecordSink* out) : in_(in), out_(out) {}

  void Read() {
    LineReader reader(in_.data);
    for (Line l; reader.Next(&l);) OnLine(l);
    CloseTraceback({}, 0);
    truncated_lines_ = reader.truncated_lines();
  }

  void Finish() {
    for (const auto& [key, c] : fingerprints_) EmitFingerprint(key.first, c.f);
    for (const auto& [key, f] : sub_group_own_) EmitFingerprint(key.first, f, kUnknownSubGroup, "sub-group, name unknown");
    for (const auto& to : timeouts_) EmitTimeout(to);
    EmitStatuses();
    if (truncated_lines_ > 0)
      out_->Diag(Sev::kInfo, Count(truncated_lines_, "over-long line", "over-long lines") + " cut", in_.rank_hint);
  }

 private:
  // Fingerprints by (rank, seq): a rank's own report beats another rank's
  // report of it, which beats an inference; the first of equals wins.
  enum FpSource { kInferred, kNamed, kOwn };
  struct FpClaim {
    FpSource source;
    Fingerprint f;
  };
  // The Python traceback being collected.
  struct Traceback {
    bool open = false;
    size_t indent = 0;
    int64_t rank = -1, line = 0;
    std::vector<model::Frame> frames;  // outermost first, as printed
    std::string thread;                // the thread threading's excepthook named, "" none (the main thread)
  };

  void OnLine(const Line& l) {
    std::string_view t = l.text;
    PgPrefix pg = FindPgPrefix(t);
    int64_t rank = l.rank >= 0 ? l.rank : (pg.found && pg.IsDefault() && pg.rank >= 0) ? pg.rank : in_.rank_hint;
    if (OnTraceback(l, rank)) return;
    if (OnThreadHeader(l)) return;
    if (Contains(t, "Traceback (most recent call last):")) {
      // The header names the thread only when the traceback follows it at once.
      traceback_thread_ = thread_header_line_ == l.number - 1 ? thread_header_ : std::string();
      return;
    }
    // Watchdog timeout (and its repeats in "terminated with exception" / what()).
    if (Contains(t, "Watchdog caught collective operation timeout")) return OnTimeout(l, pg, rank);
    if (OnStatus(l, pg)) return;
    if (Contains(t, "Detected mismatch between collectives")) return OnMismatch(l, rank);
    if (Contains(t, "Running collective: CollectiveFingerPrint(")) {
      Fingerprint f = ParseFingerprint(t.substr(t.find("CollectiveFingerPrint(")));
      Claim(l.rank >= 0 ? l.rank : pg.rank >= 0 ? pg.rank : in_.rank_hint, f, kOwn);
      return;
    }
    if (Contains(t, "is running inconsistent collective")) return Event(rank, Kind::kMismatch, t, l.number, "0");
    OnCrashOrExit(l, pg, rank);
  }

  // `File "x.py", line 3, in f` frames and the exception line that ends
  // them (a Python traceback); true when the line belongs to one.
  bool OnTraceback(const Line& l, int64_t rank) {
    std::string_view t = l.text;
    std::string indent, fname, func;
    int64_t fline = 0;
    if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), FileLine(), &indent, &fname, &fline, &func)) {
      if (!tb_.open) {
        tb_.open = true;
        tb_.indent = indent.size();
        tb_.rank = rank;
        tb_.line = l.number;
        tb_.thread = std::move(traceback_thread_);
        traceback_thread_.clear();
      }
      if (tb_.frames.size() < 512) tb_.frames.push_back({std::string(Trim(func)), fname, fline});
      return true;
    }
    if (!tb_.open) return false;
    size_t ind = 0;
    while (ind < t.size() && (t[ind] == ' ' || t[ind] == '\t')) ++ind;
    if (t.empty() || ind > tb_.indent) return true;  // the source line of a frame, or ^^^ markers
    CloseTraceback(t, l.number);
    return false;
  }

  // Ends the open traceback: its stack (innermost first) and, from the
  // exception line that follows it, a crash or exit event.
  void CloseTraceback(std::string_view exception_line, int64_t line_no) {
    static const RE2 kException(R"re(^\s*([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)): (.*)$)re");
    if (!tb_.open) return;
    tb_.open = false;
    std::string thread = std::move(tb_.thread);
    tb_.thread.clear();
    if (!thread.empty()) {
      // A chained traceback may follow: the same thread's (OnThreadHeader).
      thread_header_ = thread;
      thread_header_line_ = line_no;
    }
    if (tb_.rank < 0 || tb_.frames.empty()) return;
    out_->NoteRank(tb_.rank);
    model::StackSample s;
    s.thread = thread.empty() ? "traceback" : thread;
    s.frames.assign(tb_.frames.rbegin(), tb_.frames.rend());
    s.file = out_->file();
    s.line = tb_.line;
    if (stacks_of_[tb_.rank]++ < 200) out_->AddStack(tb_.rank, std::move(s));
    tb_.frames.clear();
    // A thread's traceback surely ends in its exception (the excepthook's
    // header said so): any type name, with or without a message
    // ("scenarios._BadShard: ...", testdata/torch/thread_crash).
    static const RE2 kAnyException(R"re(^\s*([A-Za-z_][\w.]*)(?:: (.*))?$)re");
    std::string ex, msg;
    re2::StringPiece line(exception_line.data(), exception_line.size());
    if (!exception_line.empty() && (RE2::PartialMatch(line, kException, &ex, &msg) ||
                                    (!thread.empty() && RE2::FullMatch(line, kAnyException, &ex, &msg)))) {
      if (Contains(msg, "Detected mismatch between collectives")) return;  // the mismatch handler has it
      Kind k = IsCrashText(msg) ? Kind::kCrash : IsConsequenceText(msg) ? Kind::kExit : Kind::kCrash;
      // In a thread that threading started, an uncaught exception ends that
      // thread only (its excepthook prints it; the process lives on), unless
      // it is a timeout or lost peer of the collective the thread ran: that
      // stays what it is.
      if (!thread.empty() && k == Kind::kCrash) k = Kind::kThreadError;
      Event(tb_.rank, k, msg.empty() ? ex : ex + ": " + msg, line_no, {}, -1, {}, -1, 0, -1, thread);
    }
  }

  // `Exception in thread NAME:` (CPython's threading.excepthook, 3.8+, and
  // Thread._bootstrap_inner before it): the traceback that follows is of a
  // thread other than the main one. A chained exception's traceback
  // ("During handling of the above exception, ...") is the same thread's.
  // True when the line is such a header.
  bool OnThreadHeader(const Line& l) {
    static const RE2 kHeader(R"re(^Exception in thread (.+):\s*$)re");
    std::string name;
    std::string_view t = Trim(l.text);
    bool chain = t.empty() || t == "During handling of the above exception, another exception occurred:" ||
                 t == "The above exception was the direct cause of the following exception:";
    if (chain && !thread_header_.empty() && thread_header_line_ == l.number - 1) {
      thread_header_line_ = l.number;
      return true;
    }
    if (!RE2::FullMatch(re2::StringPiece(l.text.data(), l.text.size()), kHeader, &name)) return false;
    thread_header_ = std::move(name);
    thread_header_line_ = l.number;
    return true;
  }

  // `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N,
  // OpType=..., Timeout(ms)=...) ran for N milliseconds` (checkTimeout).
  void OnTimeout(const Line& l, const PgPrefix& pg, int64_t rank) {
    static const RE2 kWork(
        R"re(Work([A-Z]+)\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?, Timeout\(ms\)=(\d+)\)(?: ran for (\d+) milliseconds)?)re");
    std::string_view t = l.text;
    Timeout to;
    std::string numel_in, numel_out, ran;
    size_t w = t.find("Work");
    std::string_view rest = t.substr(w == std::string_view::npos ? 0 : w);
    if (!RE2::PartialMatch(re2::StringPiece(rest.data(), rest.size()), kWork, &to.backend, &to.seq, &to.op_type,
                           &numel_in, &numel_out, &to.timeout_ms, &ran)) {
      out_->Diag(Sev::kWarning,
                 "line " + std::to_string(l.number) + ": watchdog timeout line not understood (truncated?)", rank,
                 l.offset);
      return;
    }
    if (!numel_in.empty() && !ParseDec(numel_in, &to.numel_in)) to.numel_in = -1;
    if (!numel_out.empty() && !ParseDec(numel_out, &to.numel_out)) to.numel_out = -1;
    if (!ran.empty() && !ParseDec(ran, &to.ran_ms)) to.ran_ms = -1;
    to.global = l.rank;
    to.pg_rank = pg.rank;
    to.pg = pg;
    to.message = std::string(t.substr(t.find("Watchdog caught")).substr(0, 1024));
    to.line = l.number;
    to.offset = l.offset;
    timed_out_ranks_.insert(rank);
    for (const auto& o : timeouts_)
      if (o.seq == to.seq && o.global == to.global && o.pg_rank == to.pg_rank && o.op_type == to.op_type &&
          (o.pg.Name() == to.pg.Name() || !to.pg.found))
        return;  // the same timeout repeated
    timeouts_.push_back(std::move(to));
  }

  // The PG status line after a timeout (both wordings of the releases);
  // false when the line is none.
  bool OnStatus(const Line& l, const PgPrefix& pg) {
    static const RE2 kOldStatus(
        R"re(Timeout at NCCL work: (-?\d+), last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+))re");
    static const RE2 kNewStatus(
        R"re(failure detected by watchdog at work sequence id: (-?\d+) PG status: last enqueued work: (-?\d+), last completed work: (-?\d+))re");
    re2::StringPiece t(l.text.data(), l.text.size());
    Status st;
    if (!RE2::PartialMatch(t, kNewStatus, &st.seq, &st.enqueued, &st.completed) &&
        !RE2::PartialMatch(t, kOldStatus, &st.seq, &st.enqueued, &st.completed))
      return false;
    st.global = l.rank;
    st.pg_rank = pg.rank;
    st.pg = pg;
    statuses_.push_back(st);
    return true;
  }

  // TORCH_DISTRIBUTED_DEBUG=DETAIL: `Detected mismatch between collectives
  // on ranks. Rank A is running collective: CollectiveFingerPrint(...), but
  // Rank B is running collective: CollectiveFingerPrint(...)`.
  void OnMismatch(const Line& l, int64_t rank) {
    static const RE2 kRanks(
        R"re(Rank (\d+) is running collective: CollectiveFingerPrint\((.*?)\), but Rank (\d+) is running collective: CollectiveFingerPrint\((.*))re");
    std::string_view t = l.text;
    int64_t a = -1, b = -1;
    std::string fa, fb;
    if (!RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), kRanks, &a, &fa, &b, &fb)) {
      Event(rank, Kind::kMismatch, t.substr(t.find("Detected mismatch")), l.number);
      return;
    }
    Fingerprint pa = ParseFingerprint(fa), pb = ParseFingerprint(fb);
    std::string msg(t.substr(t.find("Detected mismatch")).substr(0, 2048));
    // The ranks of the message are ranks of the checked pg (the wrapper's
    // backend->getRank(), ProcessGroupWrapper.cpp), and rank a is the
    // reporter itself. A reporter whose global rank (its [rankN]: prefix,
    // else the file's rank) is not a checked a pg that is not the world,
    // and the line does not say which (DETAIL's pgs record no name either,
    // testdata/torch/c_detail_sub): its ranks cannot be placed. The
    // reporter's own fingerprint is still its op there, so it becomes an op
    // of pg kUnknownSubGroup: every member raises the same error, so the
    // members' logs side by side show which of them called another op.
    int64_t reporter = l.rank >= 0 ? l.rank : in_.rank_hint;
    if (reporter >= 0 && reporter != a) {
      if (pa.ok && sub_group_own_.size() < (1u << 16)) sub_group_own_.try_emplace({reporter, pa.seq}, pa);
      Event(reporter, Kind::kMismatch, msg + " [ranks of a sub-group, not global]", l.number,
            std::string(kUnknownSubGroup), pa.ok ? pa.seq + 1 : -1, TorchOpName(pa.op_type));
      return;
    }
    // The reporting rank (a) compared its fingerprint with every rank's in
    // rank order and stopped at the first that differs (b): the ranks below
    // b agree with a (ProcessGroupWrapper.cpp verify()).
    // In a length decode (IsLengthDecode) the ranks below b passed only the
    // check of the lengths: they are not known to run what a runs.
    bool length = IsLengthDecode(pa, pb);
    Claim(a, pa, kOwn);
    if (!length) Claim(b, pb, kNamed);
    // Once per (reporter, first differing rank, seq): a log repeating the
    // line (or a hostile one) must not redo 65,536 claims a line.
    // A rank out of range (a garbled number) is dropped, and so is what it
    // would imply: 65,536 inferred claims from one line of a few hundred
    // bytes (found by the fuzz campaign: 878 bytes, 1.9 s, 195 MB).
    if (pa.ok && !length && b < model::kMaxRank && inferred_from_.emplace(a, b, pa.seq).second &&
        fingerprints_.size() < (1u << 20))
      for (int64_t r = 0; r < b && r < (1 << 16); ++r)
        if (r != a) Claim(r, pa, kInferred);
    Event(a, Kind::kMismatch, msg, l.number, "0",
          pa.ok   ? pa.seq + 1
          : pb.ok ? pb.seq + 1
                  : -1,
          TorchOpName(pa.op_type), b);  // b: the other side the report compares rank a with
  }

  // Watchdog crashes, terminate / exit lines, torchelastic failures,
  // heartbeat and dump notes, CUDA and NCCL errors: events.
  void OnCrashOrExit(const Line& l, const PgPrefix& pg, int64_t rank) {
    static const RE2 kDumpFrom(R"re(collective timeout from\s+rank (\d+))re");
    static const RE2 kElastic(R"re(failed \(exitcode: (-?\d+)\) local_rank: (\d+))re");
    std::string_view t = l.text;
    re2::StringPiece sp(t.data(), t.size());
    size_t wd = t.find("watchdog thread terminated with exception: ");
    int64_t code = 0, local = -1, first = -1;
    if (wd != std::string_view::npos) {
      std::string_view why = t.substr(wd + 44);
      if (!Contains(why, "Watchdog caught")) Event(rank, Kind::kCrash, t, l.number, pg.Name());
    } else if (Contains(t, "terminate called")) {
      Event(rank, timed_out_ranks_.count(rank) || rank < 0 ? Kind::kExit : Kind::kCrash, t, l.number);
    } else if (Contains(t, "we are taking the entire process down")) {
      Event(rank, Kind::kExit, t, l.number, pg.Name());
    } else if (RE2::PartialMatch(sp, kElastic, &code, &local)) {
      // torchelastic prints the local rank; the global one is unknown here.
      // The exit code is kept (negative: the signal, as torchelastic prints it).
      Event(l.rank >= 0 ? l.rank : local, Kind::kExit,
            std::string(t) + (l.rank >= 0 ? "" : " [rank is torchelastic's local_rank]"), l.number, {}, -1, {}, -1,
            code);
    } else if (Contains(t, "Heartbeat monitor timed out") || Contains(t, "watchdog got stuck")) {
      Event(rank, Kind::kOther, t, l.number, pg.Name());
    } else if (RE2::PartialMatch(sp, kDumpFrom, &first)) {
      Event(rank, Kind::kOther, t.substr(0, 512), l.number, pg.Name());
    } else if (IsCrashText(t) && !Contains(t, "CUDA_LAUNCH_BLOCKING") && !Contains(t, "might be asynchronously") &&
               !Contains(t, "TORCH_USE_CUDA_DSA")) {  // CUDA's advice lines repeat the words of the error
      Event(rank, Kind::kCrash, t, l.number, pg.found ? pg.Name() : "", -1, {}, -1, 0, FaulthandlerSignal(t));
    }
  }

  // A LogEvent of `rank` (none for rank -1; at most 500 a rank; the same
  // text repeated, as an exception and its what(), counts once).
  void Event(int64_t rank, Kind kind, std::string_view msg, int64_t line, std::string pg = {}, int64_t seq = -1,
             std::string op = {}, int64_t peer = -1, int64_t exit_code = 0, int64_t signal = -1,
             std::string thread = {}) {
    if (rank < 0) return;
    out_->NoteRank(rank);
    if (events_of_[rank] >= 500) return;
    std::string text(Trim(msg.substr(0, 2048)));
    if (!seen_events_.emplace(rank, kind, pg, seq, text).second) return;
    ++events_of_[rank];
    model::LogEvent e;
    e.kind = kind;
    e.message = std::move(text);
    e.file = out_->file();
    e.line = line;
    e.pg = std::move(pg);
    e.seq = seq;
    e.op = std::move(op);
    e.peer = peer;
    e.exit_code = exit_code;
    e.signal = signal;
    e.thread = std::move(thread);
    out_->AddEvent(rank, std::move(e));
  }

  void Claim(int64_t rank, const Fingerprint& f, FpSource source) {
    if (rank < 0 || !f.ok || fingerprints_.size() >= (1u << 20)) return;
    auto [it, fresh] = fingerprints_.try_emplace({rank, f.seq}, FpClaim{source, f});
    if (!fresh && source > it->second.source) it->second = FpClaim{source, f};
  }

  // A fingerprint as the rank's op on pg `pg` (the default pg unless the
  // report shows a sub-group).
  void EmitFingerprint(int64_t rank, const Fingerprint& f, std::string_view pg = "0",
                       std::string_view desc = "default_pg") {
    model::Interner& pool = out_->Strings(rank);
    model::OpRecord r;
    r.record_id = static_cast<int64_t>(out_->OpCount(rank));
    r.pg_name = pool.Str(pg);
    r.pg_desc = pool.Str(desc);
    // SequenceNumber is the pg's collective count before this op
    // (getSequenceNumberForGroup()); Flight Recorder numbers it one more.
    r.collective_seq = f.seq + 1;
    std::string backend = f.device == "cpu" ? "gloo" : "nccl";
    r.profiling_name = pool.Str(backend + ":" + TorchOpName(f.op_type));
    model::ParseProfilingName(&r);
    if (f.has_shape) r.input_sizes = r.output_sizes = pool.Intern(model::Shapes{f.shape});
    if (!f.dtype.empty()) r.input_dtypes = r.output_dtypes = pool.Intern(model::Dtypes{f.dtype});
    r.state = model::OpState::kScheduled;
    out_->AddOp(rank, r);
  }

  // A timeout as the rank's op and a kTimeout event. Its pg: the watchdog
  // line's, else the status line's of the same rank and seq; its global
  // rank from [rankN]:, a default-pg rank, or the file's rank.
  void EmitTimeout(const Timeout& to) {
    PgPrefix pg = to.pg;
    if (!pg.found || (pg.id.empty() && pg.guid.empty())) {
      for (const auto& st : statuses_)
        if (st.seq == to.seq && st.pg.found && !st.pg.Name().empty() &&
            ((to.global >= 0 && st.global == to.global) || (to.global < 0 && st.pg_rank == to.pg_rank))) {
          pg = st.pg;
          break;
        }
    }
    std::string name = pg.Name().empty() ? "0" : pg.Name();
    std::string desc = pg.desc.empty() && name == "0" ? "default_pg" : pg.desc;
    int64_t rank = to.global;
    if (rank < 0 && (name == "0" || desc == "default_pg")) rank = to.pg_rank;
    if (rank < 0) rank = in_.rank_hint;
    if (rank < 0) rank = to.pg_rank;
    if (rank < 0) {
      out_->Diag(Sev::kWarning, "line " + std::to_string(to.line) + ": watchdog timeout of an unknown rank", -1,
                 to.offset);
      return;
    }
    model::Interner& pool = out_->Strings(rank);
    model::OpRecord r;
    r.record_id = static_cast<int64_t>(out_->OpCount(rank));
    r.pg_name = pool.Str(name);
    r.pg_desc = pool.Str(desc);
    r.collective_seq = to.seq;
    std::string backend = to.backend;
    for (char& c : backend) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    std::string op = TorchOpName(to.op_type);
    r.profiling_name = pool.Str(backend + ":" + op);
    model::ParseProfilingName(&r);
    r.is_p2p = op == "send" || op == "recv" || op == "recv_any_source";
    if (r.is_p2p) {
      r.p2p_seq = to.seq;
      r.collective_seq = -1;
    }
    // Coalesced work prints size_t(-1): no size then.
    if (to.numel_in >= 0) r.input_sizes = pool.Intern(model::Shapes{{to.numel_in}});
    if (to.numel_out >= 0) r.output_sizes = pool.Intern(model::Shapes{{to.numel_out}});
    r.state = model::OpState::kStarted;
    r.retired = true;
    r.completed = false;
    r.timeout_ms = to.timeout_ms;
    if (to.ran_ms >= 0) r.duration_ms = static_cast<double>(to.ran_ms);
    out_->AddOp(rank, r);
    // The pg's size, when the counts say it (a gather of 2 x NumelIn has two
    // members): the members that left no record are then counted.
    if (int64_t n = logs::MembersBySizes(op, to.numel_in, to.numel_out); n >= 2) {
      model::PgConfig& cfg = out_->PgConfig(rank, name);
      cfg.size = std::max(cfg.size, n);
    }
    model::LogEvent e;
    e.kind = Kind::kTimeout;
    e.message = to.message;
    e.file = out_->file();
    e.line = to.line;
    e.pg = name;
    e.seq = to.seq;
    e.op = op;
    out_->AddEvent(rank, std::move(e));
  }

  // Last enqueued / completed work per (rank, numeric PG ID).
  void EmitStatuses() {
    for (const auto& st : statuses_) {
      int64_t rank = st.global >= 0 ? st.global : (st.pg.IsDefault() ? st.pg_rank : in_.rank_hint);
      int64_t id = -1;
      if (rank < 0 || !ParseDec(st.pg.id.empty() ? "0" : st.pg.id, &id)) continue;
      model::PgStatus& ps = out_->PgStatus(rank, id);
      ps.last_enqueued = std::max(ps.last_enqueued, st.enqueued);
      ps.last_completed = std::max(ps.last_completed, st.completed);
    }
  }

  const Artifact& in_;
  RecordSink* out_;
  Traceback tb_;
  // The last `Exception in thread NAME:` header and its line; the thread of
  // the traceback it heads, until that traceback's first frame.
  std::string thread_header_, traceback_thread_;
  int64_t thread_header_line_ = -1;
  std::vector<Timeout> timeouts_;
  std::vector<Status> statuses_;
  std::set<int64_t> timed_out_ranks_;
  std::map<int64_t, int> events_of_, stacks_of_;  // per rank: how many this file gave (capped)
  std::set<std::tuple<int64_t, Kind, std::string, int64_t, std::string>> seen_events_;
  std::map<std::pair<int64_t, int64_t>, FpClaim> fingerprints_;
  // (global rank, SequenceNumber) -> the rank's own fingerprint in a
  // sub-group mismatch report.
  std::map<std::pair<int64_t, int64_t>, Fingerprint> sub_group_own_;
  std::set<std::tuple<int64_t, int64_t, int64_t>> inferred_from_;  // (a, b, seq) whose ranks below b were claimed
  int64_t truncated_lines_ = 0;
};

}  // namespace

bool ParseTorchLog(const Artifact& in, RecordSink* out) {
  TorchLogReader reader(in, out);
  reader.Read();
  reader.Finish();
  return true;
}

}  // namespace hangdx::ingest
