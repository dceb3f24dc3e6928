#include "hangdx/ingest/formats/nccl_log/nccl_log.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "hangdx/base/periodic_log.h"
#include "hangdx/base/rank_set.h"
#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using logs::Contains;
using logs::kMaxLineBytes;
using logs::Line;
using logs::LineReader;
using logs::NcclDtypeName;
using logs::NcclOpToTorch;
using logs::ParseDec;
using logs::ParseHex;
using logs::Trim;

using Sev = model::Diagnostic::Severity;

struct Anchor {
  std::string_view level;  // INFO, WARN, TRACE, CALL, ...
  std::string_view head;   // text before "NCCL <LEVEL> "
  std::string_view msg;    // text after it
};

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

// Finds the last "NCCL <LEVEL> " on the line (interleaved output glues
// several prefixes together: the last one owns the message).
bool FindAnchor(std::string_view t, Anchor* a) {
  size_t pos = t.size();
  while (pos > 0) {
    size_t p = t.rfind("NCCL ", pos - 1);
    if (p == std::string_view::npos) return false;
    pos = p;
    if (p > 0 && t[p - 1] != ' ') continue;
    size_t w = p + 5, e = w;
    while (e < t.size() && IsUpper(t[e])) ++e;
    if (e - w < 3 || e - w > 8 || e >= t.size() || t[e] != ' ') continue;
    a->level = t.substr(w, e - w);
    a->head = t.substr(0, p);
    a->msg = t.substr(e + 1);
    return true;
  }
  return false;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// The last `host:pid:tid` token of the head; sets host:pid and tid.
bool Identity(std::string_view head, std::string* proc, std::string* tid) {
  size_t end = head.size();
  while (end > 0) {
    while (end > 0 && head[end - 1] == ' ') --end;
    size_t begin = head.rfind(' ', end ? end - 1 : 0);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    if (begin >= end) break;
    std::string_view tok = head.substr(begin, end - begin);
    size_t c2 = tok.rfind(':');
    if (c2 != std::string_view::npos && c2 > 0) {
      size_t c1 = tok.rfind(':', c2 - 1);
      if (c1 != std::string_view::npos && c1 > 0 && AllDigits(tok.substr(c1 + 1, c2 - c1 - 1)) &&
          AllDigits(tok.substr(c2 + 1))) {
        *proc = std::string(tok.substr(0, c2));
        *tid = std::string(tok.substr(c2 + 1));
        return true;
      }
    }
    end = begin;
  }
  return false;
}

struct Comm {
  std::string ptr;
  std::string comm_id;  // "0x..." or ""
  int64_t rank = -1, nranks = -1;
};

// Interned text of an NCCL log: comm pointers, commIds, op names and
// thread ids repeat on every line, so an op holds their ids (a 1 GB log
// has about 9 million op lines).
class Names {
 public:
  Names() { Id(""); }  // kNoName
  uint32_t Id(std::string_view s) {
    if (!texts_.empty() && texts_[last_] == s) return last_;
    auto it = ids_.find(s);
    if (it == ids_.end()) {
      texts_.emplace_back(s);
      it = ids_.emplace(texts_.back(), static_cast<uint32_t>(texts_.size() - 1)).first;
    }
    return last_ = it->second;
  }
  const std::string& Text(uint32_t id) const { return texts_[id]; }

 private:
  std::deque<std::string> texts_;  // stable addresses: ids_ keys view them
  std::unordered_map<std::string_view, uint32_t> ids_;
  uint32_t last_ = 0;
};

constexpr uint32_t kNoName = 0;  // Names id of "" (Names::Id("") is called first)

struct PendingOp {
  uint32_t comm_ptr = kNoName;
  uint32_t comm_id = kNoName;  // known at parse time, else resolved at the end
  uint32_t nccl_name = kNoName;
  uint32_t tid = kNoName;
  int64_t op_count = -1, count = -1, dtype = -1, root = -1, nranks = -1;
  int64_t line = 0;
  uint32_t key = 0;  // the id of its OpKey (NcclLogReader::KeyId)
};

// What an op's record is made of, but its opCount (EmitOp).
struct OpKey {
  uint32_t comm_ptr, comm_id, nccl_name, tid;
  int64_t count, dtype, root, nranks;
  bool operator==(const OpKey&) const = default;
};
struct OpKeyHash {
  size_t operator()(const OpKey& k) const {
    size_t h = k.comm_ptr;
    for (int64_t v : {int64_t{k.comm_id}, int64_t{k.nccl_name}, int64_t{k.tid}, k.count, k.dtype, k.root, k.nranks})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

// An enqueued op as a process keeps it until it is emitted: the id of its
// OpKey and its opCount and line as deltas from the process's op before.
// A training step repeats the same few: a PeriodicLog of them holds one
// step (a 10 GB log has 85 million op lines; as PendingOps they were 6 GB).
struct OpDelta {
  uint32_t key = 0;
  int64_t dcount = 0, dline = 0;
  bool operator==(const OpDelta&) const = default;
};

// The fields of an enqueue line `<Name>: opCount <hex> sendbuff <p>
// recvbuff <p> count <n> datatype <n> op <n> root <n> comm <p>[ [nranks=<n>]]`
// (src/enqueue.cc), as the views of `text` that hold them.
struct EnqueueFields {
  std::string_view name, opcount, ptr, nranks;
  int64_t count = -1, dtype = -1, redop = -1, root = -1;
};

// Reads `word` then a space-free token ending at a space or the end; false
// when the text does not start with `word`.
bool Token(std::string_view* t, std::string_view word, std::string_view* tok) {
  if (t->substr(0, word.size()) != word) return false;
  t->remove_prefix(word.size());
  size_t e = 0;
  // RE2's \S: not one of [\t\n\f\r ].
  while (e < t->size() && (*t)[e] != ' ' && (*t)[e] != '\t' && (*t)[e] != '\n' && (*t)[e] != '\r' && (*t)[e] != '\f')
    ++e;
  if (e == 0) return false;
  *tok = t->substr(0, e);
  t->remove_prefix(e);
  return true;
}

// Like Token, the token a decimal integer (`neg`: a leading '-' allowed)
// that fits int64; followed by anything but a digit.
bool Number(std::string_view* t, std::string_view word, bool neg, int64_t* v) {
  if (t->substr(0, word.size()) != word) return false;
  t->remove_prefix(word.size());
  const char* b = t->data();
  const char* e = t->data() + t->size();
  if (!neg && b < e && *b == '-') return false;
  auto [p, ec] = std::from_chars(b, e, *v);
  if (ec != std::errc() || (p < e && *p >= '0' && *p <= '9')) return false;
  t->remove_prefix(p - b);
  return true;
}

// The enqueue line's fields, the line's name starting `text` (which must
// start with [A-Za-z0-9_]+ and ": opCount "). The same match as
// `(\w+): opCount ([0-9a-fA-F]+) sendbuff (\S+) recvbuff (\S+) count (\d+)
// datatype (\d+) op (\d+) root (-?\d+) comm (\S+)(?: \[nranks=(\d+)\])?`
// anchored at the start, without a regex (this runs once per op line);
// false when that pattern does not match there.
bool ParseEnqueue(std::string_view text, EnqueueFields* f) {
  size_t colon = text.find(": opCount ");
  if (colon == 0 || colon == std::string_view::npos) return false;
  f->name = text.substr(0, colon);
  std::string_view t = text.substr(colon + 2), sendbuf, recvbuf;
  if (!Token(&t, "opCount ", &f->opcount)) return false;
  for (char c : f->opcount)
    if (!isxdigit(static_cast<unsigned char>(c))) return false;
  if (!Token(&t, " sendbuff ", &sendbuf) || !Token(&t, " recvbuff ", &recvbuf) ||
      !Number(&t, " count ", false, &f->count) || !Number(&t, " datatype ", false, &f->dtype) ||
      !Number(&t, " op ", false, &f->redop) || !Number(&t, " root ", true, &f->root) || !Token(&t, " comm ", &f->ptr))
    return false;
  f->nranks = {};
  if (t.substr(0, 9) == " [nranks=") {
    size_t e = 9;
    while (e < t.size() && t[e] >= '0' && t[e] <= '9') ++e;
    if (e > 9 && e < t.size() && t[e] == ']') f->nranks = t.substr(9, e - 9);
  }
  return true;
}

struct Proc {
  std::string key;                    // host:pid, or "" for prefix-less lines of a one-process file
  int64_t prefix_rank = -1;           // from a peeled [rankN]: / slurm prefix
  std::map<std::string, Comm> comms;  // by pointer
  PeriodicLog<OpDelta> ops;           // its op lines, in file order
  int64_t last_count = 0, last_line = 0;
  std::vector<uint32_t> comm_ptrs;  // the comm pointers its ops name (Names ids)
  std::vector<PendingOp> orphans;   // prefix-less op lines placed here (PlaceOrphans), by line
  bool has_ops() const { return ops.size() > 0 || !orphans.empty(); }
  std::vector<model::LogEvent> events;
  std::string version;
  int64_t first_offset = 0;
};

model::LogEvent::Kind WarnKind(std::string_view msg) {
  if (Contains(msg, "Cuda failure") || Contains(msg, "illegal memory access") || Contains(msg, "CUDA error") ||
      Contains(msg, "unhandled cuda error") || Contains(msg, "Unhandled CUDA error"))
    return model::LogEvent::Kind::kCrash;
  if (Contains(msg, "Mismatched collective") || Contains(msg, "collective mismatch"))
    return model::LogEvent::Kind::kMismatch;
  return model::LogEvent::Kind::kOther;
}

}  // namespace

int SniffNcclLog(std::string_view data) {
  bool yes = Contains(data, " NCCL INFO ") || Contains(data, " NCCL WARN ") || Contains(data, " NCCL TRACE ") ||
             (Contains(data, ": opCount ") && Contains(data, " sendbuff "));
  return yes ? 50 : 0;
}

namespace {

// One pass over an NCCL log: a handler per kind of line collects each
// process's communicators, enqueued ops and events; Finish() places the
// prefix-less op lines and writes every process's records as its rank's.
class NcclLogReader {
 public:
  NcclLogReader(const Artifact& in, RecordSink* out) : in_(in), out_(out) {}

  void Read() {
    LineReader reader(in_.data);
    for (Line l; reader.Next(&l);) OnLine(l);
    if (reader.truncated_lines() > 0)
      out_->Diag(Sev::kInfo, Count(reader.truncated_lines(), "over-long line", "over-long lines") + " cut at " +
                                 std::to_string(kMaxLineBytes) + " bytes");
  }

  void Finish() {
    PlaceOrphans();
    size_t real_procs = 0;
    for (auto& p : procs_)
      if (p.has_ops() || !p.comms.empty()) ++real_procs;
    for (auto& p : procs_) {
      if (!p.has_ops() && p.comms.empty() && p.events.empty()) continue;
      int64_t rank = RankOf(p, real_procs);
      if (rank < 0) {
        out_->Diag(Sev::kWarning,
                   "NCCL process " + (p.key.empty() ? std::string("(no prefix)") : p.key) +
                       ": no Init line or rank prefix says its rank; its lines are not used",
                   -1, p.first_offset);
        continue;
      }
      if (rank == in_.rank_hint && HintIsThePid(p)) WarnPidAsRank(p, rank);
      EmitProc(&p, rank);
    }
  }

 private:
  void OnLine(const Line& l) {
    std::string_view t = l.text;
    if (t.empty()) return;
    Anchor a;
    bool anchored = FindAnchor(t, &a);
    std::string_view msg = anchored ? a.msg : t;
    std::string key, tid;
    if (anchored) Identity(a.head, &key, &tid);
    // Per-op enqueue line (also without a prefix when output was interleaved).
    size_t oc = msg.find(": opCount ");
    if (oc != std::string_view::npos) return OnEnqueue(l, msg, oc, anchored ? key : std::string(), tid);
    if (!anchored) {
      if (t.substr(0, 13) == "NCCL version ") file_version_ = std::string(Trim(t.substr(13)));
      return;
    }
    if (key.empty()) key = "?";  // an NCCL line whose prefix was cut
    Proc& p = ProcFor(key, l.offset);
    if (l.rank >= 0) p.prefix_rank = l.rank;
    if (msg.substr(0, 13) == "NCCL version ") {
      std::string_view v = Trim(msg.substr(13));
      p.version = std::string(v.substr(0, v.find(' ')));
      return;
    }
    if (OnInit(l, msg, key, &p)) return;
    if (a.level == "WARN" || (a.level == "INFO" && WarnKind(msg) == model::LogEvent::Kind::kCrash)) OnWarn(l, msg, &p);
  }

  // `AllReduce: opCount 1a sendbuff ... comm 0x.. [nranks=N] ...`
  // (src/enqueue.cc), its name starting before `oc`. `key` is the line's
  // host:pid, "" when the line has no NCCL prefix (an orphan).
  void OnEnqueue(const Line& l, std::string_view msg, size_t oc, const std::string& key, const std::string& tid) {
    size_t b = oc;
    while (b > 0 && (isalnum(static_cast<unsigned char>(msg[b - 1])) || msg[b - 1] == '_')) --b;
    EnqueueFields f;
    std::string name, opcount, sendbuf, recvbuf, ptr, nranks;  // the regex's, when the fast parse fails
    if (!ParseEnqueue(msg.substr(b), &f)) {
      // Unanchored, as the line's first match may start later (glued output).
      static const RE2 kColl(
          R"re((\w+): opCount ([0-9a-fA-F]+) sendbuff (\S+) recvbuff (\S+) count (\d+) datatype (\d+) op (\d+) root (-?\d+) comm (\S+)(?: \[nranks=(\d+)\])?)re");
      re2::StringPiece text(msg.data() + b, msg.size() - b);
      if (!RE2::PartialMatch(text, kColl, &name, &opcount, &sendbuf, &recvbuf, &f.count, &f.dtype, &f.redop, &f.root,
                             &ptr, &nranks)) {
        out_->Diag(Sev::kWarning,
                   "line " + std::to_string(l.number) + ": NCCL enqueue line not understood (truncated?)", -1,
                   l.offset);
        return;
      }
      f.name = name;
      f.opcount = opcount;
      f.ptr = ptr;
      f.nranks = nranks;
    }
    PendingOp op;
    op.nccl_name = names_.Id(f.name);
    op.comm_ptr = names_.Id(f.ptr);
    op.count = f.count;
    op.dtype = f.dtype;
    op.root = f.root;
    op.tid = names_.Id(tid);
    op.line = l.number;
    if (!ParseHex(f.opcount, &op.op_count)) op.op_count = -1;
    if (!f.nranks.empty() && !ParseDec(f.nranks, &op.nranks)) op.nranks = -1;
    if (key.empty()) {
      if (l.rank >= 0) op.tid = names_.Id("rank" + std::to_string(l.rank));
      orphans_.emplace_back(op, l.offset);
      return;
    }
    size_t pi = ProcIndex(key, l.offset);
    Proc& p = procs_[pi];
    if (l.rank >= 0) p.prefix_rank = l.rank;
    auto c = p.comms.find(names_.Text(op.comm_ptr));
    if (c != p.comms.end()) op.comm_id = names_.Id(c->second.comm_id);
    ptr_owner_.try_emplace(op.comm_ptr, pi);
    Keep(&p, op);
  }

  // Appends op to process *p's op lines.
  void Keep(Proc* p, const PendingOp& op) {
    p->ops.Push(OpDelta{KeyId(op), op.op_count - p->last_count, op.line - p->last_line});
    p->last_count = op.op_count;
    p->last_line = op.line;
    if (p->comm_ptrs.empty() || p->comm_ptrs.back() != op.comm_ptr) {
      auto c = std::find(p->comm_ptrs.begin(), p->comm_ptrs.end(), op.comm_ptr);
      if (c == p->comm_ptrs.end())
        p->comm_ptrs.push_back(op.comm_ptr);
      else
        std::swap(*c, p->comm_ptrs.back());  // the last one named is checked first
    }
  }

  // The id of what `op` is made of but its opCount and line (keys_).
  uint32_t KeyId(const PendingOp& op) {
    OpKey key{op.comm_ptr, op.comm_id, op.nccl_name, op.tid, op.count, op.dtype, op.root, op.nranks};
    // A step's few keys, found without hashing the whole key.
    uint32_t& cached = key_cache_[(static_cast<uint64_t>(op.count) * 31 + op.nccl_name * 7 + op.comm_ptr) & 15];
    if (cached < keys_.size() && keys_[cached] == key) return cached;
    auto [it, fresh] = key_ids_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
    if (fresh) keys_.push_back(key);
    return cached = it->second;
  }

  // Calls f(PendingOp&) for each op line of process `p`, in file order
  // (orphans placed there merged by line).
  template <typename F>
  void ForEachOp(const Proc& p, F f) const {
    size_t k = 0;
    PendingOp op;
    int64_t count = 0, line = 0;
    p.ops.ForEach([&](const OpDelta& d) {
      const OpKey& key = keys_[d.key];
      count += d.dcount;
      line += d.dline;
      for (; k < p.orphans.size() && p.orphans[k].line < line; ++k) {
        PendingOp orphan = p.orphans[k];
        f(orphan);
      }
      op.comm_ptr = key.comm_ptr;
      op.comm_id = key.comm_id;
      op.nccl_name = key.nccl_name;
      op.tid = key.tid;
      op.count = key.count;
      op.dtype = key.dtype;
      op.root = key.root;
      op.nranks = key.nranks;
      op.op_count = count;
      op.line = line;
      op.key = d.key;
      f(op);
    });
    for (; k < p.orphans.size(); ++k) {
      PendingOp orphan = p.orphans[k];
      f(orphan);
    }
  }

  // `comm 0x.. rank R nranks N ... commId 0x.. - Init COMPLETE` and the
  // Abort / Destroy COMPLETE lines (src/init.cc). False when not one.
  bool OnInit(const Line& l, std::string_view msg, const std::string& key, Proc* p) {
    static const RE2 kInit(R"re(comm (0x[0-9a-fA-F]+|\(nil\)) rank (\d+) n[Rr]anks (\d+))re");
    static const RE2 kCommId(R"re(commId (0x[0-9a-fA-F]+))re");
    std::string ptr;
    int64_t rank = -1, nranks = -1;
    if (!RE2::PartialMatch(re2::StringPiece(msg.data(), msg.size()), kInit, &ptr, &rank, &nranks)) return false;
    Comm& c = p->comms[ptr];
    c.ptr = ptr;
    c.rank = rank;
    c.nranks = nranks;
    std::string id;
    if (RE2::PartialMatch(re2::StringPiece(msg.data(), msg.size()), kCommId, &id)) c.comm_id = id;
    ptr_owner_.try_emplace(names_.Id(ptr), proc_index_[key]);
    if (Contains(msg, "Abort COMPLETE") || Contains(msg, "Destroy COMPLETE")) {
      model::LogEvent e;
      e.kind = model::LogEvent::Kind::kExit;
      e.message = "NCCL communicator " + ptr + (Contains(msg, "Abort") ? " aborted" : " destroyed");
      e.file = out_->file();
      e.line = l.number;
      e.pg = c.comm_id;
      p->events.push_back(std::move(e));
    }
    return true;
  }

  // A WARN line (or an INFO line reporting a CUDA failure): a LogEvent.
  void OnWarn(const Line& l, std::string_view msg, Proc* p) {
    if (p->events.size() >= 200) return;
    model::LogEvent e;
    e.kind = WarnKind(msg);
    e.message = std::string(Trim(msg.substr(0, 1024)));
    e.file = out_->file();
    e.line = l.number;
    p->events.push_back(std::move(e));
  }

  Proc& ProcFor(const std::string& key, int64_t offset) { return procs_[ProcIndex(key, offset)]; }

  // The index in procs_ of process `key`, added when new (first line at `offset`).
  size_t ProcIndex(const std::string& key, int64_t offset) {
    if (last_proc_ < procs_.size() && procs_[last_proc_].key == key) return last_proc_;  // lines come in runs
    auto [it, fresh] = proc_index_.try_emplace(key, procs_.size());
    if (fresh) {
      procs_.emplace_back();
      procs_.back().key = key;
      procs_.back().first_offset = offset;
    }
    return last_proc_ = it->second;
  }

  // Prefix-less op lines: the process whose comm pointer they name, else the
  // only process of the file.
  void PlaceOrphans() {
    for (auto& [op, offset] : orphans_) {
      auto own = ptr_owner_.find(op.comm_ptr);
      size_t idx;
      if (own != ptr_owner_.end()) {
        idx = own->second;
      } else if (procs_.size() <= 1) {
        if (procs_.empty()) ProcFor("", offset);
        idx = 0;
        ptr_owner_.try_emplace(op.comm_ptr, idx);
      } else {
        out_->Diag(Sev::kWarning,
                   "line " + std::to_string(op.line) +
                       ": NCCL enqueue line without a host:pid prefix in a log of several processes; "
                       "cannot tell whose it is",
                   -1, offset);
        continue;
      }
      op.key = KeyId(op);
      procs_[idx].orphans.push_back(op);
      if (std::find(procs_[idx].comm_ptrs.begin(), procs_[idx].comm_ptrs.end(), op.comm_ptr) ==
          procs_[idx].comm_ptrs.end())
        procs_[idx].comm_ptrs.push_back(op.comm_ptr);
    }
    // Placed in file order (ForEachOp merges them with the process's own by line).
    auto by_line = [](const PendingOp& a, const PendingOp& b) { return a.line < b.line; };
    for (auto& p : procs_)
      if (!std::is_sorted(p.orphans.begin(), p.orphans.end(), by_line))
        std::stable_sort(p.orphans.begin(), p.orphans.end(), by_line);
  }

  // The process's global rank: a prefix's, else its rank in its largest
  // communicator, else the file's when it holds one process; -1 unknown.
  int64_t RankOf(const Proc& p, size_t real_procs) const {
    int64_t rank = p.prefix_rank;
    if (rank < 0) {
      int64_t best = -1;
      for (const auto& [ptr, c] : p.comms)
        if (c.rank >= 0 && c.nranks > best) {
          best = c.nranks;
          rank = c.rank;
        }
    }
    if (rank < 0 && real_procs <= 1) rank = in_.rank_hint;
    return rank;
  }

  // True when the rank the file's name gives is the process id of its lines
  // (NCCL_DEBUG_FILE=%h.%p, the documented way to split NCCL's log per
  // process, names them host.pid) and nothing in the lines says the rank.
  bool HintIsThePid(const Proc& p) const {
    if (p.prefix_rank >= 0 || in_.rank_hint < 0) return false;
    for (const auto& [ptr, c] : p.comms)
      if (c.rank >= 0) return false;
    size_t colon = p.key.rfind(':');
    return colon != std::string::npos && p.key.substr(colon + 1) == std::to_string(in_.rank_hint);
  }

  // Says that `rank` is a process id used as a rank (HintIsThePid): the
  // records stay, under that number, so that the analysis still compares
  // the processes, but the user is told to name the real ranks.
  void WarnPidAsRank(const Proc& p, int64_t rank) {
    out_->Diag(Sev::kWarning,
               "the number in this file's name (" + std::to_string(rank) + ") is the process id of its lines (" +
                   p.key + ": NCCL_DEBUG_FILE=%h.%p), not a rank, and no Init line gives the rank: shown as rank " +
                   std::to_string(rank) + "; pass --rank FILE=RANK to name it",
               rank, p.first_offset);
  }

  // Writes process *p's records as rank `rank`'s.
  void EmitProc(Proc* p, int64_t rank) {
    out_->NoteRank(rank);
    // A process's own "NCCL version" line, else the file's (first wins).
    if (!p->version.empty() || (!file_version_.empty() && !versioned_.count(rank))) {
      out_->SetCommLibVersion(rank, p->version.empty() ? file_version_ : p->version);
      versioned_.insert(rank);
    }
    int64_t largest = 0;
    for (const auto& [ptr, c] : p->comms) largest = std::max(largest, c.nranks);
    anon_name_.clear();
    anon_count_.clear();
    made_.assign(keys_.size(), std::nullopt);
    // Records of communicators with a commId are final as emitted: the
    // sink may cut them as they come (memory by communicators, not lines).
    // An anonymous communicator's are renamed after the load
    // (MatchAnonymousNcclComms), which needs them all.
    if (AllNamed(*p)) out_->StreamOps(rank);
    p->ops.Seal();
    out_->ReserveOps(rank, p->ops.size() + p->orphans.size());
    ForEachOp(*p, [&](PendingOp& op) { EmitOp(*p, &op, rank, largest); });
    p->ops = PeriodicLog<OpDelta>();  // emitted: free them before the next process's records
    std::vector<PendingOp>().swap(p->orphans);
    // Which rank of each communicator this process is (from its Init line).
    for (const auto& [ptr, c] : p->comms) {
      if (c.comm_id.empty() || c.rank < 0 || c.nranks <= 0 || c.rank >= c.nranks) continue;
      bool fresh = !out_->FindPgConfig(rank, c.comm_id);
      model::PgConfig& cfg = out_->PgConfig(rank, c.comm_id);
      if (fresh) cfg.desc = "NCCL communicator of " + std::to_string(c.nranks) + " ranks";
      cfg.self_local = c.rank;
    }
    for (auto& e : p->events) {
      e.file = out_->file();
      out_->AddEvent(rank, std::move(e));
    }
  }

  // True when every op of process `p` names a communicator with a commId
  // (its Init line's; an op names one known when it was read, or its
  // communicator's Init line came later).
  bool AllNamed(const Proc& p) const {
    for (uint32_t ptr : p.comm_ptrs) {
      auto c = p.comms.find(names_.Text(ptr));
      if (c == p.comms.end() || c->second.comm_id.empty()) return false;
    }
    return true;
  }

  // The pg an op of process `p` belongs to: its communicator's commId, else
  // "nccl-comm:n<nranks>#<k>" by size and first use; sets the process's
  // rank in it and the communicator's size (-1 unknown).
  std::string PgOf(const Proc& p, PendingOp* op, int64_t* comm_rank, int64_t* nranks) {
    auto c = p.comms.find(names_.Text(op->comm_ptr));
    *comm_rank = c != p.comms.end() ? c->second.rank : -1;
    *nranks = op->nranks >= 0 ? op->nranks : (c != p.comms.end() ? c->second.nranks : -1);
    if (op->comm_id == kNoName && c != p.comms.end()) op->comm_id = names_.Id(c->second.comm_id);
    if (op->comm_id != kNoName) return names_.Text(op->comm_id);
    auto [it, fresh] = anon_name_.try_emplace(op->comm_ptr);
    if (fresh) it->second = "nccl-comm:n" + std::to_string(*nranks) + "#" + std::to_string(anon_count_[*nranks]++);
    return it->second;
  }

  // One enqueued op as an OpRecord of `rank`, and its pg's config when it
  // is the first op of that pg.
  void EmitOp(const Proc& p, PendingOp* op, int64_t rank, int64_t largest) {
    // A training step repeats the same few ops: the record of an op like
    // one already made (all but its opCount) is a copy of it.
    std::optional<model::OpRecord>& made = made_[op->key];
    if (made) {
      model::OpRecord r = *made;
      r.record_id = static_cast<int64_t>(out_->OpCount(rank));
      (r.is_p2p ? r.p2p_seq : r.collective_seq) = op->op_count;
      out_->AddOp(rank, r);
      return;
    }
    model::Interner& pool = out_->Strings(rank);
    int64_t comm_rank, nranks;
    std::string pg = PgOf(p, op, &comm_rank, &nranks);
    const std::string& nccl_name = names_.Text(op->nccl_name);
    std::string_view torch_op = NcclOpToTorch(nccl_name);
    model::OpRecord r;
    r.record_id = static_cast<int64_t>(out_->OpCount(rank));
    r.pg_name = pool.Str(pg);
    bool p2p = torch_op == "send" || torch_op == "recv";
    std::string prof = "nccl:" + std::string(torch_op.empty() ? std::string_view(nccl_name) : torch_op);
    int64_t self = comm_rank >= 0 ? comm_rank : (nranks > rank ? rank : -1);
    if (p2p && self >= 0 && op->root >= 0)
      prof += torch_op == "send" ? " " + std::to_string(self) + "->" + std::to_string(op->root)
                                 : " " + std::to_string(self) + "<-" + std::to_string(op->root);
    r.profiling_name = pool.Str(prof);
    model::ParseProfilingName(&r);
    r.is_p2p = p2p;
    if (p2p)
      r.p2p_seq = op->op_count;
    else
      r.collective_seq = op->op_count;
    int64_t n = op->count;
    model::Shape ins{n}, outs{n};
    if (torch_op == "all_gather" && nranks > 0 && n <= INT64_MAX / nranks) outs = {n * nranks};
    if (torch_op == "reduce_scatter" && nranks > 0 && n <= INT64_MAX / nranks) ins = {n * nranks};
    r.input_sizes = pool.Intern(model::Shapes{ins});
    r.output_sizes = pool.Intern(model::Shapes{outs});
    std::string dt(NcclDtypeName(op->dtype));
    if (dt.empty() && op->dtype >= 0) dt = "nccl_dtype_" + std::to_string(op->dtype);
    r.input_dtypes = r.output_dtypes = pool.Intern(model::Dtypes{dt});
    r.thread_id = pool.Str(names_.Text(op->tid));
    // Enqueue lines say nothing about completion: every op is scheduled
    // until the whole job's logs show otherwise (DeriveNcclLogCompletion).
    r.state = model::OpState::kScheduled;
    out_->AddOp(rank, r);
    made = r;
    if (nranks > 0 && !out_->FindPgConfig(rank, pg))
      out_->PgConfig(rank, pg) = NewPgConfig(pg, op->comm_id == kNoName, comm_rank, rank, nranks, largest);
  }

  // The config of an NCCL-log communicator `pg` of `nranks` ranks, first
  // seen by rank `rank` (its rank in it `comm_rank`, -1 unknown; `largest`
  // the size of the process's largest communicator).
  model::PgConfig NewPgConfig(const std::string& pg, bool anonymous, int64_t comm_rank, int64_t rank, int64_t nranks,
                              int64_t largest) {
    model::PgConfig cfg;
    cfg.name = pg;
    // "NCCL communicator of N ranks": DeriveNcclLogCompletion reads N.
    cfg.desc = "NCCL communicator of " + std::to_string(nranks) + " ranks" +
               (anonymous ? ", no Init line: matched across ranks by size and order" : "");
    cfg.size = nranks;
    // Members are global ranks: known when the comm is as large as the
    // process's largest (the world) and this rank's comm rank is its global
    // rank (or unknown). Other comms: from all members' Init lines
    // (MapPgLocalRanks), else inferred from who records them.
    if ((comm_rank < 0 || comm_rank == rank) && rank < nranks && nranks >= largest && nranks <= (int64_t{1} << 20)) {
      // One list per communicator size, shared: many comms of a hostile log
      // must not each allocate a million ranks.
      auto& members = world_lists_[nranks];
      if (members.empty()) {
        std::vector<model::Rank> all(static_cast<size_t>(nranks));
        for (int64_t k = 0; k < nranks; ++k) all[k] = k;
        members = model::SharedRanks(std::move(all));
      }
      cfg.ranks = members;
      cfg.ranks_known = true;
    }
    return cfg;
  }

  const Artifact& in_;
  RecordSink* out_;
  std::vector<Proc> procs_;
  std::map<std::string, size_t> proc_index_;            // host:pid -> procs_
  size_t last_proc_ = SIZE_MAX;                         // procs_ index of the latest line's process
  Names names_;                                         // comm pointers, commIds, op names, thread ids
  std::unordered_map<uint32_t, size_t> ptr_owner_;      // comm pointer -> proc (pointers are per-process addresses)
  std::vector<std::pair<PendingOp, int64_t>> orphans_;  // prefix-less op lines, with their offset
  std::vector<OpKey> keys_;                             // what the op lines are made of but opCount and line
  std::unordered_map<OpKey, uint32_t, OpKeyHash> key_ids_;
  std::array<uint32_t, 16> key_cache_{};               // recent key ids by a cheap hash (KeyId)
  std::map<int64_t, model::SharedRanks> world_lists_;  // communicator size -> its ranks 0..size-1
  std::string file_version_;                           // a prefix-less "NCCL version" line
  std::set<int64_t> versioned_;                        // ranks given a library version
  // Names of the current process's communicators without a commId: by
  // size and first use.
  std::map<uint32_t, std::string> anon_name_;  // ptr -> name
  std::map<int64_t, int> anon_count_;          // nranks -> how many so far
  // The current process's records made so far, by what they were made of.
  std::vector<std::optional<model::OpRecord>> made_;  // by key id
};

}  // namespace

bool ParseNcclLog(const Artifact& in, RecordSink* out) {
  NcclLogReader reader(in, out);
  reader.Read();
  reader.Finish();
  return true;
}

}  // namespace hangdx::ingest
