#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using logs::Contains;
using logs::Line;
using logs::LineReader;
using logs::NcclOpToTorch;
using logs::ParseDec;
using logs::ParseDecPrefix;
using logs::Trim;

using Sev = model::Diagnostic::Severity;
using Kind = model::LogEvent::Kind;

// "AllReduce_group_name_1654NHRAllReduceComm_device" -> "all_reduce";
// "HcomAllReduce_66294..._0" -> "all_reduce".
std::string OpFromTag(std::string_view tag) {
  std::string_view name = tag.substr(0, tag.find('_'));
  if (name.substr(0, 4) == "Hcom") name.remove_prefix(4);
  if (name.substr(0, 4) == "Hccl") name.remove_prefix(4);
  std::string_view t = NcclOpToTorch(name);
  if (!t.empty()) return std::string(t);
  if (name == "AlltoAllV" || name == "AlltoAllVC" || name == "AllToAllV") return "all_to_all";
  std::string s(name);
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string DtypeName(std::string_view d) {
  static const std::map<std::string_view, std::string_view> kMap = {
      {"float32", "Float"}, {"fp32", "Float"},     {"float16", "Half"}, {"fp16", "Half"},    {"bfloat16", "BFloat16"},
      {"bf16", "BFloat16"}, {"int8", "Char"},      {"uint8", "Byte"},   {"int32", "Int"},    {"int64", "Long"},
      {"uint64", "UInt64"}, {"float64", "Double"}, {"int16", "Short"},  {"uint32", "UInt32"}};
  auto it = kMap.find(d);
  return it == kMap.end() ? std::string(d) : std::string(it->second);
}

// One stuck task, assembled from the lines that describe it.
struct Task {
  std::string stream, task, task_type, tag, group, notify, remote, alg, rank_id;
  int64_t index = -1, rank_size = -1, count = -1;
  std::string dtype, kind = "timeout";
  int64_t line = 0;
  std::string text;
};

// A device task the runtime reports failed: "an exception occurred during
// AICPU execution, stream_id:2, task_id:19016, errcode:21008", "Aicpu kernel
// execute failed, device_id=0, stream_id=2, task_id=19016, errorCode=2a.",
// "fftsplus task execute failed, dev_id=0, stream_id=50, task_id=21, ...".
struct Failure {
  std::string stream, task, type, what;
  int64_t line = 0;
};

// The value after `key` up to the next ',', ' ' or '.' ("stream_id:2," and
// "stream_id=2," give "2").
std::string_view RuntimeField(std::string_view t, std::string_view key) {
  size_t p = t.find(key);
  if (p == std::string_view::npos) return {};
  size_t i = p + key.size(), j = i;
  while (j < t.size() && t[j] != ',' && t[j] != ' ' && t[j] != '.' && t[j] != '[' && j - i < 32) ++j;
  return t.substr(i, j - i);
}

}  // namespace

std::string_view HcclField(std::string_view msg, std::string_view key) {
  size_t from = 0;
  while (from < msg.size()) {
    size_t p = msg.find(key, from);
    if (p == std::string_view::npos) return {};
    size_t i = p + key.size();
    from = p + 1;
    if (p > 0 && (isalnum(static_cast<unsigned char>(msg[p - 1])) || msg[p - 1] == '_')) continue;
    while (i < msg.size() && (msg[i] == ':' || msg[i] == ' ')) ++i;
    if (i >= msg.size() || msg[i] != '[') continue;
    int depth = 0;
    size_t j = i;
    for (; j < msg.size(); ++j) {
      if (msg[j] == '[')
        ++depth;
      else if (msg[j] == ']' && --depth == 0)
        break;
    }
    if (j >= msg.size()) return msg.substr(i + 1);  // truncated line: take the rest
    return msg.substr(i + 1, j - i - 1);
  }
  return {};
}

int SniffHcclPlog(std::string_view data) {
  for (std::string_view k :
       {"] HCCL(", "]HCCL(", "EI0002", "Notify register", "Task run failed", "Entry-Hccl", "HeartbeatAbnormal",
        "PTA call acl api failed", "hccl fftsplus task timeout", "OPS call acl api failed", "during AICPU execution",
        "Aicpu kernel execute failed", "fftsplus task execute failed"})
    if (Contains(data, k)) return 50;
  return 0;
}

namespace {

// One pass over HCCL text: a handler per kind of line (torch_npu headers,
// stuck-task records, runtime task failures, Entry- calls, heartbeat and
// timeout notes) collects what the file says; Finish() writes it all as
// the file's rank's records.
class HcclPlogReader {
 public:
  HcclPlogReader(const Artifact& in, RecordSink* out) : in_(in), out_(out) {}

  void Read() {
    LineReader reader(in_.data);
    for (Line l; reader.Next(&l);) OnLine(l);
  }

  void Finish() {
    int64_t rank = file_rank_ >= 0 ? file_rank_ : prefix_rank_ >= 0 ? prefix_rank_ : in_.rank_hint;
    if (rank < 0 && tasks_.empty() && entries_.empty() && events_.empty() && failures_.empty()) return;
    out_->NoteRank(rank);
    EmitEntries(rank);
    for (const auto& k : tasks_) EmitTask(k, rank);
    for (const auto& f : failures_) {
      model::DeviceTaskReport report;
      report.stream = f.stream;
      report.task = f.task;
      report.task_type = f.type;
      report.failed = true;
      report.what = f.what;
      report.file = out_->file();
      report.line = f.line;
      if (device_tasks_++ < 1000) out_->AddDeviceTask(rank, std::move(report));
    }
    for (auto& e : events_) {
      e.file = out_->file();
      out_->AddEvent(rank, std::move(e));
    }
  }

 private:
  // An HCCL_ENTRY_LOG_ENABLE call: `Entry-HcclAllReduce: tag[..], count[..], ...`.
  struct Entry {
    std::string comm, op, dtype;
    int64_t count = -1, line = 0;
  };

  void OnLine(const Line& l) {
    std::string_view t = l.text;
    if (t.empty()) return;
    if (l.rank >= 0) prefix_rank_ = l.rank;
    if (OnPtaHeader(l)) return;
    bool notify = Contains(t, "Notify register") || Contains(t, "notify wait") || Contains(t, "Waiting peer rank");
    if (notify || Contains(t, "Task run failed")) return OnStuckTask(l, notify);
    bool aicpu = Contains(t, "during AICPU execution") || Contains(t, "Aicpu kernel execute failed");
    if (aicpu || Contains(t, "fftsplus task execute failed")) return OnTaskFailure(l, aicpu);
    size_t entry = t.find("Entry-Hccl");
    if (entry != std::string_view::npos) return OnEntry(l, t.substr(entry + 10));
    if (Contains(t, "Cluster Exception Location") || Contains(t, "crimer rank")) return AddEvent(l, Kind::kOther);
    if (Contains(t, "hccl fftsplus task timeout") || Contains(t, "stuck notify")) AddEvent(l, Kind::kTimeout);
  }

  // torch_npu's `(PID: .., Device: .., RankID: ..)` header names the file's
  // global rank (an ERR one is also an event); false when not one.
  bool OnPtaHeader(const Line& l) {
    static const RE2 kPta(R"re(\(PID:\s*(\d+), Device:\s*(-?\d+), RankID:\s*(-?\d+)\))re");
    std::string_view t = l.text;
    int64_t pid, dev, rid;
    if (!RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), kPta, &pid, &dev, &rid) || rid < 0) return false;
    file_rank_ = rid;
    if (Contains(t, "ERR")) {
      model::LogEvent e;
      e.kind = Kind::kOther;
      e.message = std::string(Trim(t.substr(0, 1024)));
      e.line = l.number;
      events_.push_back(std::move(e));
    }
    return true;
  }

  // A notify-wait timeout or task exception, in CANN's one-line or
  // multi-line (>= 8.5: base / groupRank / opData lines) form.
  void OnStuckTask(const Line& l, bool notify) {
    std::string_view t = l.text;
    // One record can span lines: continue the last task unless this line
    // starts one.
    if (notify || Contains(t, "base information") || tasks_.empty()) {
      Task k;
      k.line = l.number;
      k.text = std::string(Trim(t.substr(0, 2048)));
      tasks_.push_back(std::move(k));
    }
    Task& k = tasks_.back();
    auto set = [](std::string* dst, std::string_view v) {
      if (!v.empty() && dst->empty()) *dst = std::string(v);
    };
    set(&k.tag, HcclField(t, "tag"));
    set(&k.stream, HcclField(t, "streamID"));
    set(&k.task, HcclField(t, "taskID"));
    set(&k.task_type, HcclField(t, "taskType"));
    set(&k.notify, HcclField(t, "notify id"));
    set(&k.alg, HcclField(t, "AlgType(level 0-1-2)"));
    std::string_view remote = HcclField(t, "remote rank");
    if (remote.empty()) {
      size_t w = t.find("Waiting peer rank: ");
      if (w != std::string_view::npos) remote = t.substr(w + 19, t.find(';', w) - w - 19);
    }
    set(&k.remote, remote);
    set(&k.group, HcclField(t, "group"));
    set(&k.rank_id, HcclField(t, "rankId"));
    int64_t v;
    if (ParseDec(HcclField(t, "rankSize"), &v)) k.rank_size = v;
    if (ParseDec(HcclField(t, "index"), &v)) k.index = v;
    if (ParseDec(HcclField(t, "count"), &v)) k.count = v;
    set(&k.dtype, HcclField(t, "dataType"));
    if (Contains(t, "[Timeout]") || notify) k.kind = "timeout";
  }

  // A device task the runtime reports failed (AICPU, fftsplus): a failure
  // (once per stream and task) and a crash event.
  void OnTaskFailure(const Line& l, bool aicpu) {
    std::string_view t = l.text;
    std::string_view stream = RuntimeField(t, "stream_id:"), task = RuntimeField(t, "task_id:");
    if (stream.empty()) stream = RuntimeField(t, "stream_id=");
    if (task.empty()) task = RuntimeField(t, "task_id=");
    std::string_view code = RuntimeField(t, "errorCode=");
    if (code.empty()) code = RuntimeField(t, "errcode:");
    if (code.empty()) code = RuntimeField(t, "err_type=");
    auto it = std::find_if(failures_.begin(), failures_.end(),
                           [&](const Failure& f) { return f.stream == stream && f.task == task; });
    if (it == failures_.end() && failures_.size() < 1000) {
      failures_.push_back({std::string(stream), std::string(task), aicpu ? "AICPU" : "fftsplus",
                           std::string(aicpu ? "kernel failed" : "task execute failed") +
                               (code.empty() ? "" : ", error " + std::string(code)),
                           l.number});
    }
    AddEvent(l, Kind::kCrash);
  }

  // `Entry-HcclAllReduce: tag[AllReduce_<comm>], count[..], dataType[..]`;
  // `rest` is the text after "Entry-Hccl".
  void OnEntry(const Line& l, std::string_view rest) {
    std::string_view api = rest.substr(0, rest.find(':'));
    if (api.substr(0, 8) == "CommInit" || api.substr(0, 11) == "CommDestroy") return;
    Entry e;
    std::string_view tag = HcclField(rest, "tag");
    e.op = OpFromTag(api);
    size_t us = tag.find('_');
    e.comm = std::string(us == std::string_view::npos ? tag : tag.substr(us + 1));
    int64_t v;
    if (ParseDec(HcclField(rest, "count"), &v)) e.count = v;
    e.dtype = DtypeName(HcclField(rest, "dataType"));
    e.line = l.number;
    if (!e.comm.empty() && entries_.size() < (1u << 22)) entries_.push_back(std::move(e));
  }

  // The line as an event of `kind` (at most 200).
  void AddEvent(const Line& l, Kind kind) {
    if (events_.size() >= 200) return;
    model::LogEvent e;
    e.kind = kind;
    e.message = std::string(Trim(l.text.substr(0, 1024)));
    e.line = l.number;
    events_.push_back(std::move(e));
  }

  // Entry- calls as ops, seq = call order per communicator; every call but
  // each communicator's last completed (the last may be the one that hangs).
  void EmitEntries(int64_t rank) {
    model::Interner& pool = out_->Strings(rank);
    std::map<std::string, int64_t> seq_of;  // Entry- call order per communicator
    std::map<std::string, size_t> last_of;  // communicator -> its last Entry- call
    for (size_t i = 0; i < entries_.size(); ++i) last_of[entries_[i].comm] = i;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      model::OpRecord r;
      r.record_id = static_cast<int64_t>(out_->OpCount(rank));
      r.pg_name = pool.Str(e.comm);
      r.collective_seq = seq_of[e.comm]++;
      r.profiling_name = pool.Str("hccl:" + e.op);
      model::ParseProfilingName(&r);
      r.is_p2p = e.op == "send" || e.op == "recv";
      if (r.is_p2p) {
        r.p2p_seq = r.collective_seq;
        r.collective_seq = -1;
      }
      if (e.count >= 0) r.input_sizes = r.output_sizes = pool.Intern(model::Shapes{{e.count}});
      if (!e.dtype.empty()) r.input_dtypes = r.output_dtypes = pool.Intern(model::Dtypes{e.dtype});
      r.completed = last_of[e.comm] != i;
      r.state = r.completed ? model::OpState::kCompleted : model::OpState::kScheduled;
      out_->AddOp(rank, r);
    }
  }

  // A stuck task: its op, its group's config, a kTimeout event, a device
  // task report and (the first one waiting on a remote) the live wait.
  void EmitTask(const Task& k, int64_t rank) {
    model::Interner& pool = out_->Strings(rank);
    std::string op = k.tag.empty() ? std::string("unknown") : OpFromTag(k.tag);
    std::string pg = k.group;
    if (pg.empty() && !k.tag.empty()) {
      size_t us = k.tag.find('_');
      pg = us == std::string::npos ? k.tag : k.tag.substr(us + 1);
    }
    model::OpRecord r;
    r.record_id = static_cast<int64_t>(out_->OpCount(rank));
    r.pg_name = pool.Str(pg);
    r.collective_seq = k.index;
    r.profiling_name = pool.Str("hccl:" + op);
    model::ParseProfilingName(&r);
    if (k.count >= 0) r.input_sizes = r.output_sizes = pool.Intern(model::Shapes{{k.count}});
    if (!k.dtype.empty()) r.input_dtypes = r.output_dtypes = pool.Intern(model::Dtypes{DtypeName(k.dtype)});
    r.retired = true;
    r.completed = false;
    r.state = model::OpState::kStarted;
    r.thread_id = pool.Str(k.stream.empty() ? std::string() : "stream " + k.stream);
    out_->AddOp(rank, r);
    if (!pg.empty() && !out_->FindPgConfig(rank, pg)) {
      model::PgConfig cfg;
      cfg.name = pg;
      cfg.desc = "HCCL group" + (k.rank_size > 0 ? " (rankSize " + std::to_string(k.rank_size) + ")" : std::string());
      // rankId[25 24]: the first number is this rank's rank in the group.
      int64_t self = -1;
      size_t used = 0;
      if (ParseDecPrefix(k.rank_id, &self, &used) && self >= 0 && (k.rank_size <= 0 || self < k.rank_size))
        cfg.self_local = self;
      out_->PgConfig(rank, pg) = std::move(cfg);
    }
    model::LogEvent e;
    e.kind = Kind::kTimeout;
    e.file = out_->file();
    e.pg = pg;
    e.seq = k.index;
    e.op = op;
    e.line = k.line;
    e.message = TaskMessage(k, op, pg);
    out_->AddEvent(rank, std::move(e));
    // The stuck task waits for a notify that the remote rank never recorded:
    // a wait on that rank, known only by its rank inside the group.
    int64_t remote = -1;
    auto res = std::from_chars(k.remote.data(), k.remote.data() + k.remote.size(), remote);
    bool placed = res.ec == std::errc() && remote >= 0 && remote < (int64_t{1} << 24);
    model::DeviceTaskReport report;
    report.stream = k.stream;
    report.task = k.task;
    report.task_type = k.task_type.empty() ? "task" : k.task_type;
    report.group = pg;
    report.notify = k.notify;
    report.op = op;
    report.remote_local = placed ? remote : -1;
    report.what = "HCCL " + op + " " + report.task_type;
    report.file = out_->file();
    report.line = k.line;
    if (device_tasks_++ < 1000) out_->AddDeviceTask(rank, std::move(report));
    if (!waits_ && placed) {
      model::WaitSnapshot w;
      w.current_op = op;
      w.waiting_for = {remote};
      w.op_seq = k.index;
      w.pg = pg;
      w.pg_local = true;
      out_->SetWait(rank, std::move(w));
      waits_ = true;
    }
  }

  // "HCCL all_reduce stuck in Notify Wait; waiting for remote rank 24 (rank
  // in group g); ...": what the record names, for the event.
  static std::string TaskMessage(const Task& k, const std::string& op, const std::string& pg) {
    std::string m = "HCCL " + op + " stuck";
    if (!k.task_type.empty()) m += " in " + k.task_type;
    if (!k.remote.empty()) m += "; waiting for remote rank " + k.remote + " (rank in group " + pg + ")";
    if (!k.rank_id.empty()) m += "; this rank's group rank(s): " + k.rank_id;
    if (k.rank_size > 0) m += "; rankSize " + std::to_string(k.rank_size);
    if (!k.stream.empty()) m += "; streamID " + k.stream;
    if (!k.task.empty()) m += " taskID " + k.task;
    if (!k.notify.empty()) m += " notify " + k.notify;
    if (!k.tag.empty()) m += "; tag " + k.tag;
    if (!k.alg.empty()) m += "; AlgType " + k.alg;
    return m;
  }

  const Artifact& in_;
  RecordSink* out_;
  int64_t file_rank_ = -1;    // torch_npu's RankID
  int64_t prefix_rank_ = -1;  // the last [rankN]: / slurm prefix
  std::vector<Task> tasks_;
  std::vector<model::LogEvent> events_;
  std::vector<Entry> entries_;
  std::vector<Failure> failures_;
  size_t device_tasks_ = 0;  // reports written (at most 1,000)
  bool waits_ = false;       // the live wait is set
};

}  // namespace

bool ParseHcclPlog(const Artifact& in, RecordSink* out) {
  HcclPlogReader reader(in, out);
  reader.Read();
  reader.Finish();
  return true;
}

}  // namespace hangdx::ingest
