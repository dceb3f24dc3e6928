#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

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

// Reads one rank's wait state; false when a field has the wrong type.
bool ReadWait(const nlohmann::json& v, model::WaitSnapshot* w) {
  if (auto f = v.find("current_op"); f != v.end()) {
    if (!f->is_string()) return false;
    w->current_op = f->get<std::string>();
  }
  if (auto f = v.find("op_seq"); f != v.end() && !f->is_null()) {
    if (!f->is_number_integer()) return false;
    w->op_seq = f->get<int64_t>();
  }
  if (auto f = v.find("wait_kind"); f != v.end()) {
    if (!f->is_string() || (*f != "any" && *f != "all")) return false;
    w->any_of = *f == "any";
  }
  // How long it has waited, and from how long that is a hang (docs/snapshot-format.md).
  for (auto [key, field, least] : {std::tuple{"waited_ms", &w->waited_ms, int64_t{0}},
                                   std::tuple{"stall_after_ms", &w->stall_after_ms, int64_t{1}}}) {
    auto f = v.find(key);
    if (f == v.end() || f->is_null()) continue;
    if (!f->is_number_integer() || f->get<int64_t>() < least) return false;
    *field = f->get<int64_t>();
  }
  if (auto f = v.find("waiting_for_ranks"); f != v.end() && !f->is_null()) {
    if (!f->is_array()) return false;
    for (const auto& x : *f) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= kMaxRank) return false;
      w->waiting_for.push_back(x.get<int64_t>());
    }
  }
  std::sort(w->waiting_for.begin(), w->waiting_for.end());
  w->waiting_for.erase(std::unique(w->waiting_for.begin(), w->waiting_for.end()), w->waiting_for.end());
  return true;
}

// At most this many in-flight collectives per pg become records of a
// rank known by its progress: a hang is at the lowest unfinished seqs.
constexpr int64_t kMaxInFlight = 4;

// Reads "progress": {"<pg>": {"enqueued": E, "completed": C}} (integers >=
// -1, E >= C); false when malformed.
bool ReadProgress(const nlohmann::json& v, std::vector<std::tuple<std::string, int64_t, int64_t>>* pgs) {
  auto f = v.find("progress");
  if (f == v.end() || f->is_null()) return true;
  if (!f->is_object()) return false;
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (!it->is_object()) return false;
    int64_t e = -2, c = -2;
    for (auto [key, field] : {std::pair{"enqueued", &e}, std::pair{"completed", &c}}) {
      auto x = it->find(key);
      if (x == it->end() || !x->is_number_integer() || x->get<int64_t>() < -1) return false;
      *field = x->get<int64_t>();
    }
    if (e < c) return false;
    pgs->emplace_back(it.key(), e, c);
  }
  return true;
}

// The records a rank known by its progress counters alone stands for: per
// pg its last completed collective (completed: the seqs before it are
// outside what this record shows, as for a Flight Recorder ring that
// wrapped) and its enqueued, unfinished ones (the lowest kMaxInFlight), of
// an op kind nobody recorded. No size, dtype or stack: those are unknown,
// never guessed.
void AddProgressOps(model::Rank rank, const std::vector<std::tuple<std::string, int64_t, int64_t>>& pgs,
                    RecordSink* out) {
  for (const auto& entry : pgs) {
    // Named references, not a structured binding: clang before 16 cannot
    // capture a binding in the lambda below (C++20 allows it, clang 14 not).
    const std::string& pg = std::get<0>(entry);
    const int64_t enqueued = std::get<1>(entry);
    const int64_t completed = std::get<2>(entry);
    model::Interner& pool = out->Strings(rank);
    int64_t id = -1;
    auto res = std::from_chars(pg.data(), pg.data() + pg.size(), id);
    if (res.ec != std::errc() || res.ptr != pg.data() + pg.size()) id = -1;
    auto add = [&](int64_t seq, bool done) {
      model::OpRecord r;
      r.record_id = static_cast<int64_t>(out->OpCount(rank));
      r.pg_id = id;
      r.pg_name = pool.Str(pg);
      r.collective_seq = seq;
      r.op_id = seq;
      r.state = done ? model::OpState::kCompleted : model::OpState::kUnknown;
      r.completed = done;
      out->AddOp(rank, r);
    };
    if (completed >= 1) add(completed, true);
    for (int64_t seq = std::max<int64_t>(completed + 1, 1); seq <= enqueued && seq <= completed + kMaxInFlight; ++seq)
      add(seq, false);
  }
}

// A strict JSON scanner for the fast path of ParseWaitSnapshot: reads
// `text` once and calls `h` as nlohmann's SAX interface would, with views
// into the text and no allocation. It reads only what a snapshot's
// producers write and gives up (false) on the rest, valid or not: a string
// with an escape or a byte outside printable ASCII, a number with a
// fraction or an exponent or outside int64, as well as on any JSON error;
// the DOM path then reads the file (and says what is wrong). nlohmann's
// SAX lexer, which made a std::string of every key and value, was most of
// the read of a 100,000-rank snapshot. Nesting is bounded by the handler,
// which refuses a value deeper than it reads.
template <class Handler>
class StrictJsonScanner {
 public:
  StrictJsonScanner(std::string_view text, Handler* h) : p_(text.data()), end_(text.data() + text.size()), h_(*h) {}

  // True when the whole text is one JSON value that the handler took.
  bool Run() {
    Space();
    if (!Value()) return false;
    Space();
    return p_ == end_;
  }

 private:
  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Word(std::string_view w) {
    if (static_cast<size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w) return false;
    p_ += w.size();
    return true;
  }
  // At a '"': the string up to the closing quote.
  bool String(std::string_view* out) {
    const char* begin = ++p_;
    for (; p_ < end_; ++p_) {
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(begin, static_cast<size_t>(p_ - begin));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x7f || c == '\\') return false;
    }
    return false;
  }
  bool Digit() const { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; }
  bool Number() {
    bool negative = p_ < end_ && *p_ == '-';
    if (negative) ++p_;
    if (!Digit()) return false;
    if (*p_ == '0' && p_ + 1 < end_ && p_[1] >= '0' && p_[1] <= '9') return false;  // a leading zero: not JSON
    uint64_t v = 0;
    for (; Digit(); ++p_) {
      uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    if (!negative) return h_.number_unsigned(v);
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;  // INT64_MIN too: no rank or time is that
    return h_.number_integer(-static_cast<int64_t>(v));
  }
  bool Value() {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return Object();
      case '[':
        return Array();
      case '"': {
        std::string_view s;
        return String(&s) && h_.string(s);
      }
      case 't':
        return Word("true") && h_.boolean(true);
      case 'f':
        return Word("false") && h_.boolean(false);
      case 'n':
        return Word("null") && h_.null();
      default:
        return Number();
    }
  }
  // After a member or an element: a ',' (taken; *more) or `close` (left
  // for the caller); false for anything else.
  bool Next(char close, bool* more) {
    Space();
    if (p_ == end_ || (*p_ != ',' && *p_ != close)) return false;
    *more = *p_ == ',';
    if (*more) ++p_;
    Space();
    return true;
  }
  bool Object() {
    ++p_;
    if (!h_.start_object()) return false;
    Space();
    for (bool more = p_ < end_ && *p_ != '}'; more;) {
      std::string_view k;
      if (p_ == end_ || *p_ != '"' || !String(&k) || !h_.key(k)) return false;
      Space();
      if (p_ == end_ || *p_++ != ':') return false;
      Space();
      if (!Value() || !Next('}', &more)) return false;
    }
    if (p_ == end_ || *p_ != '}') return false;
    ++p_;
    return h_.end_object();
  }
  bool Array() {
    ++p_;
    if (!h_.start_array()) return false;
    Space();
    for (bool more = p_ < end_ && *p_ != ']'; more;)
      if (!Value() || !Next(']', &more)) return false;
    if (p_ == end_ || *p_ != ']') return false;
    ++p_;
    return h_.end_array();
  }

  const char* p_;
  const char* end_;
  Handler& h_;
};

// The fast path of ParseWaitSnapshot: one pass of StrictJsonScanner that
// reads a clean snapshot straight into wait states, with no DOM (a
// 100,000-rank snapshot's DOM took most of the read and a few hundred
// bytes per rank). It gives up (a handler call returns false) on anything
// the DOM path would warn about or reject: a key that is not digits, a
// member that is not an object or lacks both wait keys, a field of the
// wrong type or out of range, a nested value under an unknown key, a
// repeated key, a float. The caller then reads the file again through the
// DOM path, which says what is wrong, so both paths give the same waits
// and diagnostics.
class FastSnapshot {
 public:
  struct Member {
    std::string key;
    model::WaitSnapshot wait;
  };

  // null is "not given" for these fields (as ReadWait reads them).
  bool null() {
    bool optional =
        field_ == kOther || field_ == kOpSeq || field_ == kWaitedMs || field_ == kStallAfterMs || field_ == kWaiting;
    return depth_ == 2 && optional && Done();
  }
  bool boolean(bool) { return field_ == kOther && depth_ == 2 ? Done() : false; }
  bool number_integer(int64_t v) { return Integer(v); }
  bool number_unsigned(uint64_t v) { return v <= static_cast<uint64_t>(INT64_MAX) && Integer(static_cast<int64_t>(v)); }
  bool string(std::string_view v) {
    if (depth_ != 2) return false;
    if (field_ == kCurrentOp) {
      members_.back().wait.current_op.assign(v);
    } else if (field_ == kWaitKind) {
      if (v != "any" && v != "all") return false;
      members_.back().wait.any_of = v == "any";
    } else if (field_ != kOther) {
      return false;
    }
    return Done();
  }
  bool start_object() {
    if (depth_ == 0) return ++depth_, true;
    if (depth_ != 1 || !expect_member_) return false;
    expect_member_ = false;
    depth_ = 2;
    seen_ = 0;
    others_.clear();
    return true;
  }
  bool end_object() {
    if (depth_ == 2) {
      if (!(seen_ & (Bit(kCurrentOp) | Bit(kWaiting)))) return false;
      auto& w = members_.back().wait.waiting_for;
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
    }
    --depth_;
    return true;
  }
  bool start_array() {
    if (depth_ != 2 || field_ != kWaiting) return false;
    depth_ = 3;
    return true;
  }
  bool end_array() {
    if (depth_ != 3) return false;
    depth_ = 2;
    return Done();
  }
  bool key(std::string_view k) {
    if (depth_ == 1) {
      if (k.empty() || k.size() > 19 || !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
      members_.push_back({std::string(k), {}});
      expect_member_ = true;
      return true;
    }
    if (depth_ != 2) return false;
    field_ = k == "current_op"          ? kCurrentOp
             : k == "op_seq"            ? kOpSeq
             : k == "wait_kind"         ? kWaitKind
             : k == "waited_ms"         ? kWaitedMs
             : k == "stall_after_ms"    ? kStallAfterMs
             : k == "waiting_for_ranks" ? kWaiting
                                        : kOther;
    if (field_ == kOther) {
      if (std::find(others_.begin(), others_.end(), k) != others_.end()) return false;
      others_.emplace_back(k);
      return true;
    }
    if (seen_ & Bit(field_)) return false;
    seen_ |= Bit(field_);
    return true;
  }

  // The members in key order (as the DOM's std::map holds them): indices
  // into members(); false when a key occurs twice (the DOM path warns).
  // When every key is a rank in range written without leading zeros (as
  // producers write them), text order only reorders ranks that are all
  // kept and warned about in no order: the file's order is used, no sort.
  bool SortedOrder(std::vector<uint32_t>* order) const {
    order->resize(members_.size());
    for (uint32_t i = 0; i < order->size(); ++i) (*order)[i] = i;
    if (std::all_of(members_.begin(), members_.end(), [](const Member& m) {
          return (m.key.size() == 1 || m.key[0] != '0') && m.key.size() <= 8 && std::stoll(m.key) < kMaxRank;
        }))
      return !order->empty();
    std::sort(order->begin(), order->end(), [&](uint32_t a, uint32_t b) { return members_[a].key < members_[b].key; });
    for (size_t i = 1; i < order->size(); ++i)
      if (members_[(*order)[i]].key == members_[(*order)[i - 1]].key) return false;
    return !order->empty();
  }
  std::vector<Member>& members() { return members_; }

 private:
  enum Field { kNone, kCurrentOp, kOpSeq, kWaitKind, kWaitedMs, kStallAfterMs, kWaiting, kOther };
  static uint32_t Bit(Field f) { return 1u << f; }
  bool Done() {
    if (depth_ == 2) field_ = kNone;
    return true;
  }
  bool Integer(int64_t v) {
    // A number outside a member (a snapshot that is a bare `1`, or a
    // member's value that is not an object) is the DOM path's to describe;
    // there may be no member yet to write into.
    if (depth_ < 2 || members_.empty()) return false;
    model::WaitSnapshot& w = members_.back().wait;
    if (depth_ == 3) {
      if (v < 0 || v >= kMaxRank) return false;
      w.waiting_for.push_back(v);
      return true;
    }
    switch (field_) {
      case kOpSeq:
        w.op_seq = v;
        break;
      case kWaitedMs:
        if (v < 0) return false;
        w.waited_ms = v;
        break;
      case kStallAfterMs:
        if (v < 1) return false;
        w.stall_after_ms = v;
        break;
      case kOther:
        break;
      default:
        return false;
    }
    return Done();
  }

  std::vector<Member> members_;
  std::vector<std::string> others_;  // the current member's unknown keys
  int depth_ = 0;                    // 1: in the top object, 2: in a member, 3: in its waiting_for_ranks
  bool expect_member_ = false;
  Field field_ = kNone;
  uint32_t seen_ = 0;
};

// Reads `data` through FastSnapshot into `out`; false (nothing recorded)
// when it gave up and the DOM path must read it.
bool ParseFast(std::string_view data, RecordSink* out, bool* any) {
  FastSnapshot fast;
  std::vector<uint32_t> order;
  if (!StrictJsonScanner<FastSnapshot>(data, &fast).Run() || !fast.SortedOrder(&order)) return false;
  std::vector<bool> seen;  // "0" and "00" are one rank: the first wait counts
  // A rank twice from keys without leading zeros is a repeated key: the
  // DOM path warns about it.
  for (uint32_t i : order) {
    const std::string& k = fast.members()[i].key;
    model::Rank rank = -1;
    if (k.size() > 1 && k[0] == '0') break;  // sorted as text: the loop below tells
    if (!RankKey(k, &rank)) continue;
    if (static_cast<size_t>(rank) >= seen.size()) seen.resize(static_cast<size_t>(rank) + 1);
    if (seen[rank]) return false;
    seen[rank] = true;
  }
  seen.clear();
  *any = false;
  for (uint32_t i : order) {
    FastSnapshot::Member& m = fast.members()[i];
    model::Rank rank = -1;
    if (!RankKey(m.key, &rank)) {
      out->Diag(model::Diagnostic::Severity::kWarning, "rank " + m.key + " is out of range (0 to 16777215); skipped");
      continue;
    }
    if (static_cast<size_t>(rank) >= seen.size()) seen.resize(static_cast<size_t>(rank) + 1);
    if (!seen[rank]) {
      seen[rank] = true;
      *any = true;
      out->SetWait(rank, std::move(m.wait));
    } else {
      out->Diag(model::Diagnostic::Severity::kWarning,
                "rank key '" + m.key + "' names rank " + std::to_string(rank) +
                    " again (another key did too): the first wait counts, this one is skipped",
                rank);
    }
  }
  return true;
}

}  // namespace

int SniffWaitSnapshot(std::string_view data) {
  size_t i = 0;
  while (i < data.size() && std::isspace(static_cast<unsigned char>(data[i]))) ++i;
  if (i >= data.size() || (data[i] != '{' && data[i] != '[')) return 0;
  std::string_view head = data.substr(0, 4096);
  bool keys = head.find("\"waiting_for_ranks\"") != std::string_view::npos ||
              head.find("\"current_op\"") != std::string_view::npos;
  return keys ? 80 : 0;
}

bool ParseWaitSnapshot(const Artifact& in, RecordSink* out) {
  auto diag = [&](model::Rank rank, std::string msg, int64_t offset = -1) {
    out->Diag(model::Diagnostic::Severity::kWarning, std::move(msg), rank, offset);
  };
  if (bool any = false; ParseFast(in.data, out, &any)) return any;
  nlohmann::json j;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  if (!ParseJson(in.data, &j, &error, &offset, &dups)) {
    diag(-1, std::move(error), offset);
    return false;
  }
  WarnDuplicateKeys(dups, -1, out);
  if (!IsSnapshot(j)) {
    diag(-1, "not a wait snapshot: want {\"<rank>\": {\"current_op\", \"waiting_for_ranks\", \"op_seq\"}}");
    return false;
  }
  std::set<model::Rank> seen;  // "0" and "00" are one rank: the first wait counts
  for (auto it = j.begin(); it != j.end(); ++it) {
    model::Rank rank = -1;
    if (!RankKey(it.key(), &rank)) {
      diag(-1, "rank " + it.key() + " is out of range (0 to 16777215); skipped");
      continue;
    }
    model::WaitSnapshot w;
    std::vector<std::tuple<std::string, int64_t, int64_t>> progress;
    if (!ReadWait(*it, &w) || !ReadProgress(*it, &progress)) {
      diag(rank, "rank " + it.key() +
                     ": malformed wait state (want current_op: str, "
                     "waiting_for_ranks: [ranks 0 to 16777215], op_seq: int, waited_ms: int >= 0, "
                     "stall_after_ms: int > 0, progress: {pg: {enqueued: int, completed: int}}); skipped");
      continue;
    }
    if (seen.insert(rank).second) {
      out->SetWait(rank, std::move(w));
      AddProgressOps(rank, progress, out);
    } else  // "007" after "7", or "7" after "07" (keys come sorted as text)
      diag(rank, "rank key '" + it.key() + "' names rank " + std::to_string(rank) +
                     " again (another key did too): the first wait counts, this one is skipped");
  }
  return !seen.empty();
}

}  // namespace hangdx::ingest
