#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hangdx/ingest/formats/flight_recorder/direct_pickle.h"
#include "hangdx/ingest/formats/flight_recorder/entry_fields.h"
#include "hangdx/ingest/formats/flight_recorder/flat_pickle.h"
#include "hangdx/ingest/formats/flight_recorder/pickle.h"
#include "hangdx/ingest/json_tree.h"
#include "hangdx/ingest/json_util.h"

namespace hangdx::ingest {
namespace {

using namespace fr;  // NOLINT: the entry fields (entry_fields.h)
using Sev = model::Diagnostic::Severity;
constexpr int64_t kMaxRank = int64_t{1} << 24;  // more ranks than any job has had
// A JSON dump above this size gives its JsonTree's memory back once read
// (a rank's dump is 1 MB at 2,000 entries; the tree keeps its buffers).
constexpr size_t kKeepTreeBytes = size_t{64} << 20;

// ---- Node adapters: one converter serves both pickle and JSON trees. ----

// How MemoNode reads PickleDocument's values (the general machine).
struct PickleTree {
  using Value = PickleValue;
  const PickleValue* Items(const PickleValue& c) const { return c.c()->items.data(); }
  size_t Slots(const PickleValue& c) const { return c.c()->items.size(); }
  static const void* Identity(const PickleValue& v) { return v.c() ? static_cast<const void*>(v.c()) : &v; }
  static bool Stable(const PickleValue& v) { return !v.c() || v.c()->stable; }
};
constexpr PickleTree kPickleTree;

// How MemoNode reads FlatPickle's values (the fast reader).
struct FlatTree {
  using Value = FlatValue;
  const FlatPickle* doc;
  const FlatValue* Items(const FlatValue& c) const { return doc->Items(c); }
  size_t Slots(const FlatValue& c) const { return c.slots(); }
  static const void* Identity(const FlatValue& v) { return FlatPickle::Identity(v); }
  static bool Stable(const FlatValue& v) { return FlatPickle::Stable(v); }
};

// A value of a pickle, read through `Tree` (PickleTree or FlatTree): both
// readers give the same values, so both read the same through this one
// adapter, and the converter gives the same records whichever read it.
template <class Tree>
struct MemoNode {
  // Values are memoised: the same bytes come back at the same address
  // (CPython memoises keys and repeated strings), so caches keyed by address
  // hit, and one value may appear more than once (FindShared). In a JSON
  // tree (JNode, TNode) every value has its own address and appears once.
  static constexpr bool kMemoised = true;
  using Value = typename Tree::Value;
  using Kind = PickleValue::Kind;
  MemoNode() = default;
  explicit MemoNode(std::nullptr_t) {}  // absent
  MemoNode(const Tree* tree, const Value* value) : t(tree), v(value) {}
  const Tree* t = nullptr;
  const Value* v = nullptr;
  bool null() const { return !v || v->kind() == Kind::kNone; }
  bool is_dict() const { return v && v->is_dict(); }
  bool is_seq() const { return v && v->is_seq(); }
  bool str(std::string_view* out) const {
    if (!v || v->kind() != Kind::kStr) return false;
    *out = v->s();
    return true;
  }
  bool integer(int64_t* out) const {
    if (!v) return false;
    if (v->kind() == Kind::kInt) {
      *out = v->i();
      return true;
    }
    if (v->kind() == Kind::kBool) {
      *out = v->b();
      return true;
    }
    if (v->kind() == Kind::kStr) {  // seq ids passed as strings in PyTorch's tests
      std::string_view s = v->s();
      auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
      return r.ec == std::errc() && r.ptr == s.data() + s.size();
    }
    return false;
  }
  bool number(double* out) const {
    if (!v) return false;
    if (v->kind() == Kind::kFloat) {
      *out = v->f();
      return true;
    }
    if (v->kind() == Kind::kInt) {
      *out = static_cast<double>(v->i());
      return true;
    }
    return false;
  }
  bool boolean(bool* out) const {
    if (!v) return false;
    if (v->kind() == Kind::kBool) {
      *out = v->b();
      return true;
    }
    if (v->kind() == Kind::kInt) {
      *out = v->i() != 0;
      return true;
    }
    return false;
  }
  // Dict lookup by string key: the first match (PickleValue::Get).
  MemoNode get(std::string_view key) const {
    if (!is_dict()) return MemoNode{nullptr};
    const Value* it = t->Items(*v);
    for (size_t i = 0, n = t->Slots(*v); i + 1 < n; i += 2)
      if (it[i].kind() == Kind::kStr && it[i].s() == key) return MemoNode{t, &it[i + 1]};
    return MemoNode{nullptr};
  }
  size_t size() const { return v && (v->is_seq() || v->is_dict()) ? v->size() : 0; }
  MemoNode at(size_t i) const { return MemoNode{t, &t->Items(*v)[i]}; }
  template <typename F>
  void items_view(F f) const {  // dict items with string keys, no copies
    if (!is_dict()) return;
    const Value* it = t->Items(*v);
    for (size_t i = 0, n = t->Slots(*v); i + 1 < n; i += 2)
      if (it[i].kind() == Kind::kStr) f(it[i].s(), MemoNode{t, &it[i + 1]});
  }
  template <typename F>
  void items(F f) const {  // dict items with string keys
    if (!is_dict()) return;
    const Value* it = t->Items(*v);
    for (size_t i = 0, n = t->Slots(*v); i + 1 < n; i += 2) {
      std::string key;
      if (it[i].kind() == Kind::kStr)
        key = std::string(it[i].s());
      else if (it[i].kind() == Kind::kInt)
        key = std::to_string(it[i].i());
      else
        continue;
      f(key, MemoNode{t, &it[i + 1]});
    }
  }
  bool present() const { return v != nullptr; }
  // Identity of a shared container: memoised frame dicts are one object.
  const void* identity() const { return v ? Tree::Identity(*v) : nullptr; }
  // Whether identity() stays this value's for the document's life: a
  // streamed entry's own containers are reused once it was read
  // (PickleContainer::stable), and then appeared only once.
  bool stable() const { return !v || Tree::Stable(*v); }
};
using PNode = MemoNode<PickleTree>;
using FNode = MemoNode<FlatTree>;

struct JNode {
  static constexpr bool kMemoised = false;  // see PNode
  const nlohmann::json* v;
  bool null() const { return !v || v->is_null(); }
  bool is_dict() const { return v && v->is_object(); }
  bool is_seq() const { return v && v->is_array(); }
  bool str(std::string_view* out) const {
    if (!v || !v->is_string()) return false;
    *out = v->get_ref<const std::string&>();
    return true;
  }
  bool integer(int64_t* out) const {
    if (!v) return false;
    if (v->is_number_integer()) {
      *out = v->get<int64_t>();
      return true;
    }
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(u);
      return true;
    }
    if (v->is_boolean()) {
      *out = v->get<bool>();
      return true;
    }
    if (v->is_string()) {  // pg_status values are strings in JSON dumps
      const auto& s = v->get_ref<const std::string&>();
      auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
      return r.ec == std::errc() && r.ptr == s.data() + s.size();
    }
    return false;
  }
  bool number(double* out) const {
    if (!v || !v->is_number()) return false;
    *out = v->get<double>();
    return true;
  }
  bool boolean(bool* out) const {
    if (!v) return false;
    if (v->is_boolean()) {
      *out = v->get<bool>();
      return true;
    }
    if (v->is_number_integer()) {
      *out = v->get<int64_t>() != 0;
      return true;
    }
    return false;
  }
  JNode get(std::string_view key) const {
    if (!v || !v->is_object()) return JNode{nullptr};
    auto it = v->find(key);
    return JNode{it == v->end() ? nullptr : &*it};
  }
  size_t size() const { return v && (v->is_array() || v->is_object()) ? v->size() : 0; }
  JNode at(size_t i) const { return JNode{&(*v)[i]}; }
  template <typename F>
  void items(F f) const {
    if (!is_dict()) return;
    for (auto it = v->begin(); it != v->end(); ++it) f(it.key(), JNode{&it.value()});
  }
  template <typename F>
  void items_view(F f) const {
    if (!is_dict()) return;
    for (auto it = v->begin(); it != v->end(); ++it) f(std::string_view(it.key()), JNode{&it.value()});
  }
  bool present() const { return v != nullptr; }
  const void* identity() const { return v; }
  bool stable() const { return true; }
};

// A JsonTree value (the fast path of ParseFlightRecorderJson): reads as
// JNode reads the same value of nlohmann's tree, so that both paths give
// the same records and warnings. Mind nlohmann's quirks kept here: an
// unsigned integer counts as an integer (is_number_integer) and is read as
// int64_t, wrapping above 2^63 - 1; items() go in key order (its objects
// are std::maps).
struct TNode {
  using Kind = JsonTree::Kind;
  static constexpr bool kMemoised = false;
  TNode() = default;
  explicit TNode(std::nullptr_t) {}  // absent, as the other adapters' N{nullptr}
  TNode(const JsonTree* tree, const JsonTree::Value* value) : t(tree), v(value) {}
  const JsonTree* t = nullptr;
  const JsonTree::Value* v = nullptr;
  bool null() const { return !v || v->kind == Kind::kNull; }
  bool is_dict() const { return v && v->kind == Kind::kObject; }
  bool is_seq() const { return v && v->kind == Kind::kArray; }
  bool str(std::string_view* out) const { return v && v->str(out); }
  bool integer(int64_t* out) const {
    if (!v) return false;
    switch (v->kind) {
      case Kind::kInt:
        *out = v->i;
        return true;
      case Kind::kUint:  // nlohmann: get<int64_t>() of a number_unsigned
        *out = static_cast<int64_t>(v->u);
        return true;
      case Kind::kBool:
        *out = v->b;
        return true;
      case Kind::kString: {  // pg_status values are strings in JSON dumps
        std::string_view s(v->s, v->size);
        auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
        return r.ec == std::errc() && r.ptr == s.data() + s.size();
      }
      default:
        return false;
    }
  }
  bool number(double* out) const {
    if (!v) return false;
    switch (v->kind) {
      case Kind::kInt:
        *out = static_cast<double>(v->i);
        return true;
      case Kind::kUint:
        *out = static_cast<double>(v->u);
        return true;
      case Kind::kDouble:
        *out = v->d;
        return true;
      default:
        return false;
    }
  }
  bool boolean(bool* out) const {
    if (!v) return false;
    if (v->kind == Kind::kBool) {
      *out = v->b;
      return true;
    }
    if (v->kind == Kind::kInt || v->kind == Kind::kUint) {
      *out = v->u != 0;
      return true;
    }
    return false;
  }
  TNode get(std::string_view key) const { return TNode{t, v ? t->Find(*v, key) : nullptr}; }
  size_t size() const { return is_seq() || is_dict() ? v->size : 0; }
  TNode at(size_t i) const { return TNode{t, &t->Element(*v, i)}; }
  template <typename F>
  void items(F f) const {
    if (!is_dict()) return;
    std::vector<uint32_t> order(v->size);
    for (uint32_t i = 0; i < v->size; ++i) order[i] = i;
    auto key = [&](uint32_t i) {
      std::string_view k;
      t->Key(*v, i).str(&k);
      return k;
    };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    for (uint32_t i : order) {
      const std::string k(key(i));
      f(k, TNode{t, &t->Member(*v, i)});
    }
  }
  template <typename F>
  void items_view(F f) const {  // in the document's order: the keys differ (JsonTree)
    if (!is_dict()) return;
    for (size_t i = 0; i < v->size; ++i) {
      std::string_view k;
      t->Key(*v, i).str(&k);
      f(k, TNode{t, &t->Member(*v, i)});
    }
  }
  bool present() const { return v != nullptr; }
  const void* identity() const { return v; }
  bool stable() const { return true; }
};

// The work converting one file may cause, in values visited: 16 per byte
// of the file, and a million for any file. A dump visits each value about
// once (shared frame dicts are read once, InternFrame), so real dumps stay
// far below it; a pickle whose memo shares one container many times (a
// 20,000-integer shape referenced 20,000 times: 80 KB that would expand to
// 400 million integers) runs out of it, and the converter stops with a
// diagnostic instead of running for minutes or exhausting memory.
class WorkBudget {
 public:
  static constexpr uint64_t kPerByte = 16;
  static constexpr uint64_t kFloor = uint64_t{1} << 20;
  explicit WorkBudget(uint64_t bytes) : limit_(kPerByte * bytes + kFloor), left_(limit_) {}
  // Takes `n` units; false (and exhausted() from then on) when fewer are left.
  bool Spend(uint64_t n) {
    if (n > left_) {
      left_ = 0;
      exhausted_ = true;
      return false;
    }
    left_ -= n;
    return true;
  }
  bool exhausted() const { return exhausted_; }
  uint64_t limit() const { return limit_; }
  uint64_t left() const { return left_; }

 private:
  uint64_t limit_, left_;
  bool exhausted_ = false;
};

template <typename N>
bool ReadShapes(N n, WorkBudget* budget, std::vector<model::Shape>* out) {
  out->clear();  // keeps the capacity of the outer vector
  if (n.null()) return true;
  if (!n.is_seq() || !budget->Spend(n.size())) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    N s = n.at(i);
    if (!s.is_seq() || !budget->Spend(s.size())) {
      out->clear();
      return false;
    }
    model::Shape& shape = out->emplace_back();
    shape.reserve(s.size());
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t d;
      if (!s.at(k).integer(&d)) {
        out->clear();
        return false;
      }
      shape.push_back(d);
    }
  }
  return true;
}

// Whether shapes field `n` holds exactly `last`, each dimension read as
// ReadShapes reads it; *cost: what ReadShapes would spend of the budget.
template <typename N>
bool SameShapes(N n, const model::Shapes& last, uint64_t* cost) {
  *cost = 0;
  if (n.null()) return last.empty();
  if (!n.is_seq() || n.size() != last.size()) return false;
  uint64_t c = n.size();
  for (size_t i = 0; i < last.size(); ++i) {
    N s = n.at(i);
    if (!s.is_seq() || s.size() != last[i].size()) return false;
    c += s.size();
    for (size_t k = 0; k < last[i].size(); ++k) {
      int64_t d;
      if (!s.at(k).integer(&d) || d != last[i][k]) return false;
    }
  }
  *cost = c;
  return true;
}

// The same for a dtypes field and ReadStrings.
template <typename N>
bool SameStrings(N n, const model::Dtypes& last, uint64_t* cost) {
  *cost = 0;
  if (n.null()) return last.empty();
  std::string_view s;
  if (n.str(&s)) return last.size() == 1 && last[0] == s;
  if (!n.is_seq() || n.size() != last.size()) return false;
  for (size_t i = 0; i < last.size(); ++i)
    if (!n.at(i).str(&s) || s != last[i]) return false;
  *cost = n.size();
  return true;
}

template <typename N>
bool ReadStrings(N n, WorkBudget* budget, std::vector<std::string>* out) {
  out->clear();
  if (n.null()) return true;
  std::string_view s;
  if (n.str(&s)) {  // PyTorch's own tests pass a bare dtype string
    out->emplace_back(s);
    return true;
  }
  if (!n.is_seq() || !budget->Spend(n.size())) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n.at(i).str(&s)) return false;
    out->emplace_back(s);
  }
  return true;
}

// pg_config ranks: "[0, 1, 2]" (ProcessGroupNCCL) or "[0,1,2]" (TorchComm).
bool ParseRankText(std::string_view s, std::vector<model::Rank>* out) {
  {
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '[' || s[i] == '(' || s[i] == '{')) ++i;
    while (i < s.size()) {
      while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
      if (i >= s.size() || s[i] == ']' || s[i] == ')' || s[i] == '}') break;
      int64_t r;
      auto res = std::from_chars(s.data() + i, s.data() + s.size(), r);
      if (res.ec != std::errc()) return false;
      if (r < 0 || r >= kMaxRank) return false;
      out->push_back(r);
      i = res.ptr - s.data();
    }
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

// Also accepts a real list (re-pickled or hand-written dumps).
template <typename N>
bool ReadRankList(N n, RankListCache* cache, WorkBudget* budget, model::SharedRanks* out) {
  std::string_view s;
  if (n.str(&s)) {
    if (cache) {
      auto p = cache->Get(s, ParseRankText);
      if (!p) return false;
      *out = model::SharedRanks(std::move(p));
      return true;
    }
    std::vector<model::Rank> v;
    if (!ParseRankText(s, &v)) return false;
    *out = model::SharedRanks(std::move(v));
    return true;
  }
  if (!n.is_seq() || !budget->Spend(n.size())) return false;
  std::vector<model::Rank> v;
  for (size_t i = 0; i < n.size(); ++i) {
    int64_t r;
    if (!n.at(i).integer(&r) || r < 0 || r >= kMaxRank) return false;
    v.push_back(r);
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  *out = model::SharedRanks(std::move(v));
  return true;
}

// a == b for short strings (keys), compared inline 8 bytes at a time (the
// last 8 overlapping): a call to memcmp per key of every entry was 4 % of a
// JSON dump's reading. Reads only within both strings.
inline bool SameShortBytes(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8) {
    if (n >= 4) {  // two 4-byte words, overlapping
      uint32_t a0, a1, b0, b1;
      std::memcpy(&a0, a.data(), 4);
      std::memcpy(&a1, a.data() + n - 4, 4);
      std::memcpy(&b0, b.data(), 4);
      std::memcpy(&b1, b.data() + n - 4, 4);
      return a0 == b0 && a1 == b1;
    }
    for (size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  for (size_t i = 0; i + 8 < n; i += 8)
    if (word(a.data() + i) != word(b.data() + i)) return false;
  return word(a.data() + n - 8) == word(b.data() + n - 8);
}

// Collective seq numbers that no genuine dump holds: a negative one (the
// analysis reads it as "no seq", so the op is matched with no other rank's
// and a mismatch there vanished without a word: tester F15, every seq -100)
// or one far out of step with its pg's other records (a dump of n entries
// spans at most n seqs of a pg, since the ring buffer records every
// collective in order; one renumbered 10^12 among 1-4 is matched with
// nobody), or one no job reaches (past 2^40: a million collectives a second
// for twelve days; a dump of one record has no other record to be far from,
// so this is the only word on it). Each kind gives one warning per file
// naming the first record and counting the others.
class SeqCheck {
 public:
  // Notes collective `op` (P2P ops and ops without a collective_seq_id are
  // not looked at).
  void Add(const model::OpRecord& op) {
    if (op.is_p2p) return;
    if (op.collective_seq < 0) {
      if (negative_++ == 0) first_negative_ = Seen{Pg(op.pg_name), op.record_id, op.collective_seq};
      return;
    }
    if (op.collective_seq > kMaxSeq) {
      if (huge_++ == 0) first_huge_ = Seen{Pg(op.pg_name), op.record_id, op.collective_seq};
      return;
    }
    seen_.push_back(Seen{Pg(op.pg_name), op.record_id, op.collective_seq});
  }

  // Calls warn(message) for each kind found, in a dump of `entries` entries.
  template <class Warn>
  void Report(size_t entries, Warn warn) {
    if (negative_ > 0)
      warn(Describe(first_negative_) + " is negative (a collective's seq counts up from 0): it is matched with no " +
           "other rank's record, so a mismatch there goes unseen" + More(negative_));
    if (huge_ > 0)
      warn(Describe(first_huge_) + " is past 2^40, more collectives than any job issues (a corrupt record?): it " +
           "is matched with no other rank's record" + More(huge_));
    // Each pg's median seq: a genuine record is within `entries` of it.
    std::vector<std::vector<int64_t>> by_pg(pgs_.size());
    for (const Seen& s : seen_) by_pg[s.pg].push_back(s.seq);
    std::vector<int64_t> median(pgs_.size());
    for (size_t p = 0; p < by_pg.size(); ++p) {
      if (by_pg[p].empty()) continue;  // only negative seqs
      auto mid = by_pg[p].begin() + static_cast<std::ptrdiff_t>(by_pg[p].size() / 2);
      std::nth_element(by_pg[p].begin(), mid, by_pg[p].end());
      median[p] = *mid;
    }
    const auto span = static_cast<uint64_t>(entries);
    size_t far = 0;
    const Seen* first = nullptr;
    for (const Seen& s : seen_) {
      uint64_t d = s.seq > median[s.pg] ? static_cast<uint64_t>(s.seq) - static_cast<uint64_t>(median[s.pg])
                                        : static_cast<uint64_t>(median[s.pg]) - static_cast<uint64_t>(s.seq);
      if (d <= span) continue;
      if (far++ == 0) first = &s;
    }
    if (far > 0)
      warn(Describe(*first) + " is far from the pg's other records (around seq " + std::to_string(median[first->pg]) +
           "; " + std::to_string(entries) +
           " entries span at most as many seqs): it is matched with no other rank's record" + More(far));
  }

 private:
  struct Seen {
    uint32_t pg = 0;
    int64_t record = -1, seq = -1;
  };

  uint32_t Pg(std::string_view name) {
    // Names are interned (the dump's Interner): a name met before, at the
    // same address, is found by its address (entries cycle through a few
    // pgs: the last pg alone missed most of them, and each miss built a
    // string for the map).
    NameSlot& slot = by_address_[(reinterpret_cast<uintptr_t>(name.data()) * 0x9E3779B97F4A7C15ull) >> 60];
    if (slot.data == name.data() && slot.size == name.size() && name.data()) return slot.pg;
    if (pgs_.empty() || name != pgs_[last_]) {
      auto [it, added] = index_.try_emplace(std::string(name), static_cast<uint32_t>(pgs_.size()));
      if (added) pgs_.push_back(it->first);
      last_ = it->second;
    }
    slot = {name.data(), name.size(), last_};
    return last_;
  }
  std::string Describe(const Seen& s) const {
    return "record " + std::to_string(s.record) + ": collective_seq_id " + std::to_string(s.seq) + " of pg " +
           (pgs_[s.pg].empty() ? "''" : pgs_[s.pg]);
  }
  static std::string More(size_t n) {
    return n > 1 ? "; " + std::to_string(n - 1) + (n == 2 ? " more record like it" : " more records like it") : "";
  }

  std::vector<std::string> pgs_;                     // pg names in order of appearance
  std::unordered_map<std::string, uint32_t> index_;  // name -> its index in pgs_
  uint32_t last_ = 0;                                // the pg of the last record (most follow one of their pg)
  struct NameSlot {
    const char* data = nullptr;
    size_t size = 0;
    uint32_t pg = 0;
  };
  NameSlot by_address_[16];  // names met, by address (Pg)
  std::vector<Seen> seen_;                           // collectives with a seq >= 0
  static constexpr int64_t kMaxSeq = int64_t{1} << 40;
  size_t negative_ = 0, huge_ = 0;
  Seen first_negative_, first_huge_;
};

template <typename N>
class Converter {
 public:
  // Converts a dump of `bytes` bytes (the size sets the WorkBudget).
  Converter(model::Rank rank, RecordSink* out, RankListCache* cache, uint64_t bytes)
      : rank_(rank), out_(out), pool_(out->Strings(rank)), cache_(cache), bytes_(bytes), budget_(bytes) {
    std::fill(std::begin(field_by_content_), std::end(field_by_content_), -1);
  }

  bool Run(N root) {
    N entries{nullptr};
    if (root.is_seq()) {  // pre-2024 dumps: a bare list of entries
      Warn("top level is a bare list (dump older than version 2.2): read as entries");
      entries = root;
    } else if (!root.is_dict()) {
      Add(Sev::kError, "not a Flight Recorder dump: top level is neither a dict nor a list");
      return false;
    } else {
      ReadHeader(root);
      entries = root.get("entries");
      if (!root.get("version").present() && !entries.present()) {
        Add(Sev::kError, "not a Flight Recorder dump: no 'version' and no 'entries' key");
        return false;
      }
    }
    if (entries.present() && !entries.null() && !entries.is_seq()) {
      Add(Sev::kError, "'entries' is not a list");
      return false;
    }
    // What the streamed entries said comes after what the header says, as
    // when they are read from the tree.
    deferring_ = false;
    for (auto& d : deferred_) Add(d.severity, std::move(d.message), d.offset);
    deferred_.clear();
    const size_t listed = entries.present() ? entries.size() : 0, n = streamed_ + listed;
    // Room for the ops at once: growing by doubling held up to 2.4 times
    // their memory (12 MB of a 20,000-entry dump) while it copied. A real
    // entry takes 100 bytes or more of the file, so a pickle of empty
    // lists or memo references cannot make it reserve more than it holds.
    out_->ReserveOps(rank_, std::min<uint64_t>(listed, bytes_ / 100));
    if constexpr (N::kMemoised) FindShared(entries, listed);  // a JSON value appears once
    for (size_t i = 0; i < listed && !budget_.exhausted(); ++i) ReadEntryOnce(entries.at(i));
    seqs_.Report(n, [this](std::string msg) { Warn(std::move(msg)); });
    if (budget_.exhausted())
      Add(Sev::kError, "the pickle shares containers through its memo so often that reading it would visit more than " +
                           std::to_string(budget_.limit()) + " values (" + std::to_string(WorkBudget::kPerByte) +
                           " per byte of the file: an amplification attack?); stopped at entry " +
                           std::to_string(read_) + " of " + std::to_string(n) + ", the entries before it are used");
    if (n > 0 && read_ == 0) {
      Add(Sev::kError, "none of its " + std::to_string(n) + " entries could be read");
      return false;
    }
    return true;
  }

  // For a converter that reads a file again after another one, fed by the
  // fast reader, gave up on it part way (ParseFlightRecorderPickle): the
  // sink holds that one's ops and frames already (`other`'s ops_added,
  // frames_added), and they are the first this one makes (both read the
  // same entries the same way, up to where the fast reader stopped), so
  // they are not added again: the first ops are skipped and the first
  // frames given the indices they got.
  template <typename M>
  void Resume(const Converter<M>& other) {
    skip_ops_ = other.ops_added();
    replay_frames_ = other.frames_added();
  }
  size_t ops_added() const { return ops_added_; }
  const std::vector<uint32_t>& frames_added() const { return frames_added_; }

  // Reads one entry of a streamed list (PickleDocument::ParseViewStreaming),
  // before Run: the entries so streamed come first, then those still in the
  // tree's list. What it says waits for Run (after the header's).
  void StreamEntry(N e) {
    deferring_ = true;
    ++streamed_;
    if (budget_.exhausted()) return;
    if (!e.stable()) {  // appears once, and its identity is reused later
      model::OpRecord op;
      if (!ReadEntry(e, &op)) return;
      if (seq_given_) seqs_.Add(op);
      Emit(op);
      ++read_;
      return;
    }
    shared_.try_emplace(e.identity(), std::nullopt);  // may come again: read once
    ReadEntryOnce(e);
  }

  // StreamEntry for an entry the direct decoder read (direct_pickle.h; the
  // fast reader's converter only): the same record, with no warning (the
  // decoder declined every entry one would be given for). False, with
  // nothing done, when the WorkBudget could run out on it: the entry is
  // then read as values, where ReadEntry says so.
  bool StreamDirect(const DirectEntry& e) {
    if (budget_.exhausted() || budget_.left() < e.max_cost) return false;
    deferring_ = true;
    ++streamed_;
    model::OpRecord op;
    ReadDirect(e, &op);
    if (seq_given_) seqs_.Add(op);
    Emit(op);
    ++read_;
    return true;
  }

 private:
  // Marks the entries that appear more than once in `entries` (one
  // memoised dict referenced again: only a crafted pickle does that), so
  // each is converted once and repeated as is (ReadEntryOnce).
  void FindShared(N entries, size_t n) {
    std::unordered_map<const void*, uint32_t> uses;
    for (size_t i = 0; i < n; ++i)
      if (entries.at(i).is_dict()) ++uses[entries.at(i).identity()];
    for (const auto& [id, count] : uses)
      if (count > 1) shared_.emplace(id, std::nullopt);
  }

  // ReadEntry, converting a shared entry (FindShared) only the first time
  // it is met; a repeat adds the same op again at the cost of one value.
  void ReadEntryOnce(N e) {
    auto shared = shared_.find(e.identity());
    if (shared != shared_.end() && shared->second) {
      if (!budget_.Spend(1)) return;
      Emit(*shared->second);
      ++read_;
      return;
    }
    model::OpRecord op;
    if (!ReadEntry(e, &op)) return;
    if (seq_given_) seqs_.Add(op);
    if (shared != shared_.end()) shared->second = op;
    Emit(op);
    ++read_;
  }

  void ReadHeader(N root) {
    std::string_view s;
    N version = root.get("version");
    if (version.present()) {
      if (!version.str(&s)) {
        Warn("'version' is not a string");
      } else {
        out_->SetVersion(rank_, std::string(s));
        int major = 0, minor = 0;
        size_t dot = s.find('.');
        bool ok = dot != std::string_view::npos && std::from_chars(s.data(), s.data() + dot, major).ec == std::errc() &&
                  std::from_chars(s.data() + dot + 1, s.data() + s.size(), minor).ec == std::errc();
        if (!ok || major != 2 || minor < 2 || minor > 10)
          Add(Sev::kWarning, "unknown Flight Recorder version '" + std::string(s) +
                                 "' (known: 2.2 to 2.10); fields are read by presence");
      }
    }
    for (const char* key : {"comm_lib_version", "nccl_version", "xccl_version"}) {
      if (root.get(key).str(&s) && !s.empty()) {
        out_->SetCommLibVersion(rank_, std::string(s));
        break;
      }
    }
    root.get("pg_config").items([&](const std::string& name, N cfg) {
      if (!budget_.Spend(1 + cfg.size())) return;
      model::PgConfig pc;
      std::string_view v;
      pc.name = cfg.get("name").str(&v) ? std::string(v) : name;
      if (cfg.get("desc").str(&v)) pc.desc = std::string(v);
      N ranks = cfg.get("ranks");
      if (ranks.present() && !ReadRankList(ranks, cache_, &budget_, &pc.ranks)) {
        Warn("pg_config '" + name + "': cannot read 'ranks'");
        pc.ranks = model::SharedRanks();
      }
      pc.ranks_known = !pc.ranks.empty();
      if (name.empty() && pc.ranks.empty()) return;  // gloo writes an empty placeholder
      out_->PgConfig(rank_, name) = std::move(pc);
    });
    root.get("pg_status").items([&](const std::string& key, N st) {
      if (!budget_.Spend(1 + st.size())) return;
      int64_t pg_id;
      auto r = std::from_chars(key.data(), key.data() + key.size(), pg_id);
      if (r.ec != std::errc()) {
        Warn("pg_status key '" + key + "' is not a pg id");
        return;
      }
      model::PgStatus ps;
      st.get("last_enqueued_collective").integer(&ps.last_enqueued);
      st.get("last_started_collective").integer(&ps.last_started);
      st.get("last_completed_collective").integer(&ps.last_completed);
      out_->PgStatus(rank_, pg_id) = ps;
    });
  }

  uint32_t InternFrame(N f) {
    // Pickle dumps share one dict per distinct frame: intern by identity
    // (a frame dict that is not stable appears once).
    const void* key = f.stable() ? f.identity() : nullptr;
    // A direct-mapped cache in front of the map: an entry's ~8 frames
    // are looked up in every entry.
    FrameSlot& slot = frame_cache_[(reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> 56];
    if (key && slot.key == key) return slot.id;
    auto it = key ? frame_ids_.find(key) : frame_ids_.end();
    if (it != frame_ids_.end()) {
      slot = {key, it->second};
      return it->second;
    }
    budget_.Spend(f.size());  // a new frame: read once
    model::Frame fr;
    std::string_view s;
    if (f.get("name").str(&s)) fr.name = std::string(s);
    if (f.get("filename").str(&s)) fr.filename = std::string(s);
    f.get("line").integer(&fr.line);
    uint32_t id = NewFrame(std::move(fr));
    if (key) frame_ids_.emplace(key, id);
    return id;
  }

  // Reads entry `e` into *out; false when it is skipped (a warning says
  // why) or the WorkBudget ran out while reading it.
  bool ReadEntry(N e, model::OpRecord* out) {
    if (!e.is_dict()) {
      Warn("an entry is not a dict; skipped");
      return false;
    }
    if (!budget_.Spend(e.size())) return false;
    model::OpRecord& op = *out;
    std::string_view s;
    N field[kFieldCount];
    for (auto& f : field) f = N{nullptr};
    e.items_view([&](std::string_view key, N value) {
      int i = FieldCached(key);
      if (i >= 0) field[i] = value;
    });
    if (!field[kProfilingName].str(&s)) {
      Warn("an entry has no 'profiling_name'; skipped");
      return false;
    }
    model::Interner& pool = pool_;
    op.profiling_name = Str(s);
    model::ParseProfilingName(&op);
    // True when field i holds an integer (read into *out); a value that is
    // not one is warned about once here, and not judged again as a seq.
    auto int_field = [&](Field i, const char* key, int64_t* out) {
      N f = field[i];
      if (!f.present() || f.null()) return false;
      if (f.integer(out)) return true;
      Warn(std::string("field '") + key + "' is not an integer");
      return false;
    };
    int_field(kRecordId, "record_id", &op.record_id);
    int_field(kPgId, "pg_id", &op.pg_id);
    seq_given_ = int_field(kCollectiveSeq, "collective_seq_id", &op.collective_seq);
    int_field(kP2pSeq, "p2p_seq_id", &op.p2p_seq);
    int_field(kOpId, "op_id", &op.op_id);
    int_field(kTimeCreated, "time_created_ns", &op.time_created_ns);
    int_field(kTimeStarted, "time_discovered_started_ns", &op.time_started_ns);
    int_field(kTimeCompleted, "time_discovered_completed_ns", &op.time_completed_ns);
    int_field(kTimeout, "timeout_ms", &op.timeout_ms);
    N pg = field[kProcessGroup];
    if (pg.is_seq() && pg.size() >= 1) {
      if (pg.at(0).str(&s)) op.pg_name = Str(s);
      if (pg.size() >= 2 && pg.at(1).str(&s)) op.pg_desc = Str(s);
    } else if (pg.present()) {
      Warn("field 'process_group' is not a (name, desc) pair");
    }
    if (op.pg_name.empty() && op.pg_id >= 0) NameByPgId(&op);
    // Scratch buffers keep their capacity between entries; interning looks
    // the value up before copying it, so a repeated shape costs no allocation.
    // A field the budget cut short is not "malformed": the entry is dropped
    // and Run says why.
    // The last value of each field is kept: a dump's entries repeat a few
    // shapes, mostly one after the other, and equal vectors compare faster
    // than the interner's ordered set finds one.
    // A field equal to one of the last values read (SameShapes,
    // SameStrings) reuses it without building the vector: a dump's entries
    // cycle through a few shapes and dtypes (the training step's
    // collectives), and the vectors' allocations, string copies and the
    // interner's ordered sets were a tenth of a pickle's reading.
    uint64_t cost = 0;
    auto shapes = [&](Field f, const char* key, model::Ref<model::Shapes>* to) {
      Recent<model::Shapes>& recent = recent_shapes_[f == kOutputSizes];
      const auto* hit = recent.Find([&](const model::Shapes& v) { return SameShapes(field[f], v, &cost); });
      if (hit && budget_.Spend(cost)) {
        *to = *hit;
        return;
      }
      if (!ReadShapes(field[f], &budget_, &shapes_) && !budget_.exhausted())
        Warn(std::string("field '") + key + "' is malformed");
      *to = recent.Put(pool.InternCopy(shapes_));
    };
    auto strings = [&](Field f, const char* key, model::Ref<model::Dtypes>* to) {
      Recent<model::Dtypes>& recent = recent_dtypes_[f == kOutputDtypes];
      const auto* hit = recent.Find([&](const model::Dtypes& v) { return SameStrings(field[f], v, &cost); });
      if (hit && budget_.Spend(cost)) {
        *to = *hit;
        return;
      }
      if (!ReadStrings(field[f], &budget_, &dtypes_) && !budget_.exhausted())
        Warn(std::string("field '") + key + "' is malformed");
      *to = recent.Put(pool.InternCopy(dtypes_));
    };
    shapes(kInputSizes, "input_sizes", &op.input_sizes);
    shapes(kOutputSizes, "output_sizes", &op.output_sizes);
    strings(kInputDtypes, "input_dtypes", &op.input_dtypes);
    strings(kOutputDtypes, "output_dtypes", &op.output_dtypes);
    if (budget_.exhausted()) return false;
    if (field[kState].str(&s)) {
      op.state = ParseState(s);
      if (op.state == model::OpState::kUnknown) Warn("unknown state '" + std::string(s) + "'");
    }
    field[kRetired].boolean(&op.retired);
    field[kIsP2p].boolean(&op.is_p2p);
    if (op.op == "send" || op.op == "recv") op.is_p2p = true;
    double ms;
    if (field[kDuration].number(&ms) && std::isfinite(ms)) op.duration_ms = ms;
    if (field[kThreadName].str(&s)) op.thread_name = Str(s);
    if (field[kThreadId].str(&s)) op.thread_id = Str(s);
    N frames = field[kFrames];
    if (frames.is_seq()) {
      if (!budget_.Spend(frames.size())) return false;
      stack_.clear();
      for (size_t i = 0; i < frames.size(); ++i)
        if (frames.at(i).is_dict()) stack_.push_back(InternFrame(frames.at(i)));
      op.frames = StackRef();
    }
    return true;
  }

  // The interned stack_. A few call sites recur: the last stacks skip the
  // interner's set.
  model::Ref<model::Stack> StackRef() {
    const auto* hit = recent_stacks_.Find([&](const model::Stack& v) { return v == stack_; });
    return hit ? *hit : recent_stacks_.Put(pool_.InternCopy(stack_));
  }

  // ReadEntry for an entry of the direct decoder, step by step as ReadEntry
  // reads the same values (keep the two in step: FlightRecorder.
  // DirectAndFlatPickleReadersAgree). StreamDirect made sure the budget
  // lasts, so no Spend fails here.
  void ReadDirect(const DirectEntry& e, model::OpRecord* out) {
    auto given = [&](Field f) { return (e.given & DirectEntry::Bit(f)) != 0; };
    model::OpRecord& op = *out;
    budget_.Spend(e.pairs);
    const bool p2p_name = SlotProfilingName(e.profiling_name, &op);
    int64_t* const ints[] = {&op.record_id,       &op.pg_id,           &op.collective_seq,
                             &op.p2p_seq,         &op.op_id,           &op.time_created_ns,
                             &op.time_started_ns, &op.time_completed_ns, &op.timeout_ms};
    static_assert(kTimeout - kRecordId + 1 == sizeof ints / sizeof ints[0], "the integer fields");
    for (int f = kRecordId; f <= kTimeout; ++f)
      if (e.given & DirectEntry::Bit(f)) *ints[f - kRecordId] = e.ints[f];
    seq_given_ = given(kCollectiveSeq);
    if (given(kProcessGroup)) {
      op.pg_name = SlotStr(e.pg_name);
      op.pg_desc = SlotStr(e.pg_desc);
    }
    if (op.pg_name.empty() && op.pg_id >= 0) NameByPgId(&op);
    // The sizes and dtypes by their bytes: the same bytes, the same value
    // (strings read back from the same memo slots), interned once. What
    // they spend is what ReadEntry spends on them.
    for (int k = 0; k < 2; ++k) {
      budget_.Spend(uint64_t{e.shape_count[k]} + e.dim_count[k]);
      (k ? op.output_sizes : op.input_sizes) =
          by_bytes_shapes_.Get(e.sizes[k], [&] {
            e.Shapes(k, &shapes_);
            return pool_.InternCopy(shapes_);
          });
      budget_.Spend(e.bare_dtypes[k] ? 0 : e.dtype_count[k]);
      (k ? op.output_dtypes : op.input_dtypes) =
          by_bytes_dtypes_.Get(e.dtypes[k], [&] {
            e.Dtypes(k, &dtypes_);
            return pool_.InternCopy(dtypes_);
          });
    }
    if (given(kState)) op.state = ParseState(e.state.s);
    if (given(kRetired)) op.retired = e.ints[kRetired] != 0;
    if (given(kIsP2p)) op.is_p2p = e.ints[kIsP2p] != 0;
    if (p2p_name) op.is_p2p = true;  // a send or recv
    if (given(kDuration) && std::isfinite(e.duration_ms)) op.duration_ms = e.duration_ms;
    if (given(kThreadName)) op.thread_name = SlotStr(e.thread_name);
    if (given(kThreadId)) op.thread_id = SlotStr(e.thread_id);
    if (given(kFrames)) {
      budget_.Spend(e.frame_items);
      // A plain list (frames read back) met before: its frames are known,
      // interning them again would spend nothing and give the same stack.
      const auto* hit = e.frames_plain ? by_bytes_stacks_.Find(e.frames_bytes) : nullptr;
      if (hit) {
        op.frames = *hit;
        return;
      }
      const DirectBuf<uint32_t>* dicts = &e.frames;
      if (e.frames_plain) {
        frame_dicts_.clear();
        e.FrameDicts(&frame_dicts_);
        dicts = &frame_dicts_;
      }
      stack_.clear();
      const FlatTree tree{e.doc};
      for (uint32_t f : *dicts) stack_.push_back(SlotFrame(tree, e, f));
      op.frames = StackRef();
      if (e.frames_plain) by_bytes_stacks_.Put(e.frames_bytes, op.frames);
    }
  }

  // Values made of the direct decoder's entries, by the bytes that gave
  // them (the same bytes give the same value in one pickle: its memo
  // slots are not stored twice): direct-mapped on a hash of the bytes,
  // up to kMaxBytes of them.
  template <class T>
  class ByBytes {
   public:
    static constexpr size_t kMaxBytes = 256;
    // The value of bytes `b`, made by make() the first time.
    template <class Make>
    model::Ref<T> Get(std::string_view b, Make make) {
      if (const model::Ref<T>* hit = Find(b)) return *hit;
      return Put(b, make());
    }
    const model::Ref<T>* Find(std::string_view b) const {
      const Slot& s = slots_[Hash(b)];
      return s.used && SameShortBytes(s.bytes, b) ? &s.ref : nullptr;
    }
    model::Ref<T> Put(std::string_view b, model::Ref<T> r) {
      if (b.size() > kMaxBytes) return r;
      Slot& s = slots_[Hash(b)];
      s.bytes.assign(b);
      s.ref = r;
      s.used = true;
      return r;
    }

   private:
    struct Slot {
      std::string bytes;
      model::Ref<T> ref;
      bool used = false;
    };
    static size_t Hash(std::string_view b) {  // 0..63
      // Two words, overlapping for a short span (most are 4 to 16 bytes),
      // and a loop past 16.
      constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
      const size_t n = b.size();
      uint64_t lo = 0, hi = 0, h = n * kMul;
      if (n >= 8) {
        std::memcpy(&lo, b.data(), 8);
        std::memcpy(&hi, b.data() + n - 8, 8);
        for (size_t i = 8; i + 8 < n; i += 8) {
          uint64_t w;
          std::memcpy(&w, b.data() + i, 8);
          h = (h ^ w) * kMul;
        }
      } else if (n >= 4) {
        uint32_t a, z;
        std::memcpy(&a, b.data(), 4);
        std::memcpy(&z, b.data() + n - 4, 4);
        lo = a;
        hi = z;
      } else {
        for (size_t i = 0; i < n; ++i) lo = (lo << 8) | static_cast<unsigned char>(b[i]);
      }
      h = ((h ^ lo) * kMul ^ hi) * kMul;
      return h >> 58;  // the product's top bits: its low ones depend on the bytes' low bits only
    }
    Slot slots_[64];
  };
  ByBytes<model::Shapes> by_bytes_shapes_;
  ByBytes<model::Dtypes> by_bytes_dtypes_;
  ByBytes<model::Stack> by_bytes_stacks_;
  DirectBuf<uint32_t> frame_dicts_;

  // What the direct decoder's entries made of memo slots: a slot's
  // interned string, its profiling name parsed, the frame of a frame dict,
  // so that a string or frame read back costs an index, not a lookup. A
  // slot's value never changes while entries are decoded directly
  // (FlatPickle stops when one is stored twice); strings are checked by
  // address all the same. Slots past kSlotCacheMax (crafted pickles) go
  // uncached, so these stay small.
  static constexpr uint32_t kSlotCacheMax = uint32_t{1} << 16;
  static constexpr uint32_t kNoFrame = UINT32_MAX;
  struct SlotText {
    const char* p = nullptr;
    size_t n = 0;
    std::string_view value;
  };
  struct SlotName {
    const char* p = nullptr;
    size_t n = 0;
    std::string_view name, backend, op;
    int32_t self = -1, peer = -1;
    bool p2p = false;  // op is "send" or "recv"
  };
  std::vector<SlotText> slot_text_;
  std::vector<SlotName> slot_name_;
  std::vector<uint32_t> slot_frame_;  // kNoFrame: not met yet
  template <class T>
  static T* SlotOf(std::vector<T>* v, uint32_t slot) {
    if (slot >= kSlotCacheMax) return nullptr;
    if (slot >= v->size()) v->resize(slot + 1);
    return &(*v)[slot];
  }
  [[gnu::always_inline]] std::string_view SlotStr(const DirectEntry::Text& t) {
    if (t.slot < slot_text_.size() && slot_text_[t.slot].p == t.s.data() && slot_text_[t.slot].n == t.s.size())
      return slot_text_[t.slot].value;
    const std::string_view v = Str(t.s);
    if (SlotText* c = SlotOf(&slot_text_, t.slot)) *c = {t.s.data(), t.s.size(), v};
    return v;
  }
  // op's profiling_name and what ParseProfilingName makes of it; true for
  // a send or recv (then the op is P2P).
  bool SlotProfilingName(const DirectEntry::Text& t, model::OpRecord* op) {
    if (t.slot < slot_name_.size() && slot_name_[t.slot].p == t.s.data() && slot_name_[t.slot].n == t.s.size()) {
      const SlotName& c = slot_name_[t.slot];
      op->profiling_name = c.name;
      op->backend = c.backend;
      op->op = c.op;
      op->p2p_self_local = c.self;
      op->p2p_peer_local = c.peer;
      return c.p2p;
    }
    op->profiling_name = Str(t.s);
    model::ParseProfilingName(op);
    const bool p2p = op->op == "send" || op->op == "recv";
    if (SlotName* c = SlotOf(&slot_name_, t.slot))
      *c = {t.s.data(), t.s.size(), op->profiling_name, op->backend, op->op, op->p2p_self_local, op->p2p_peer_local, p2p};
    return p2p;
  }
  uint32_t SlotFrame(const FlatTree& tree, const DirectEntry& e, uint32_t f) {
    if (f & DirectEntry::kLoose) return InternFrame(N{&tree, &e.loose[f & ~DirectEntry::kLoose]});
    if (f < slot_frame_.size() && slot_frame_[f] != kNoFrame) return slot_frame_[f];
    const uint32_t id = InternFrame(N{&tree, &e.memo[f]});
    if (f < kSlotCacheMax) {
      if (f >= slot_frame_.size()) slot_frame_.resize(f + 1, kNoFrame);
      slot_frame_[f] = id;
    }
    return id;
  }

  // An entry whose process_group is ('', ''): under
  // TORCH_DISTRIBUTED_DEBUG=DETAIL the ProcessGroupWrapper's inner backend
  // and its fingerprint helper record no name, for every pg alike (the
  // default pg, each new_group, each one's helper; torch 2.13, gloo:
  // testdata/torch/c_detail, c_detail_sub). Their pg_id still tells them
  // apart (the process's count of backends it created), so each pg_id is a
  // pg of its own, named "''#<pg_id>": one name '' would make one pg of
  // them and a mismatch of their colliding seqs. Which real pg that is the
  // dump does not say, and the name says so.
  // Interned by content (pool_.Str): the made-up name is no buffer's
  // bytes, and Str() keys pickle strings by their address.
  void NameByPgId(model::OpRecord* op) {
    std::string id = std::to_string(op->pg_id);
    op->pg_name = pool_.Str("''#" + id);
    if (op->pg_desc.empty()) op->pg_desc = pool_.Str("no name; pg_id " + id);
  }

  // A problem of the whole dump, or of one entry (repeats are counted by
  // the sink: "field 'state' is malformed (2000 times)").
  void Add(Sev sev, std::string msg, int64_t offset = -1) {
    if (deferring_)
      deferred_.push_back({sev, std::move(msg), offset});
    else
      out_->Diag(sev, std::move(msg), rank_, offset);
  }
  void Warn(std::string msg) { Add(Sev::kWarning, std::move(msg)); }

  model::Rank rank_;
  RecordSink* out_;
  model::Interner& pool_;
  RankListCache* cache_;
  uint64_t bytes_;  // the file's size
  WorkBudget budget_;
  size_t read_ = 0;      // entries read
  size_t streamed_ = 0;  // entries streamed (StreamEntry)
  // What went to the sink (Emit, NewFrame), and what a converter resuming
  // after the fast reader finds there already (Resume).
  size_t ops_added_ = 0, skip_ops_ = 0;
  std::vector<uint32_t> frames_added_, replay_frames_;
  size_t replayed_frames_ = 0;
  void Emit(const model::OpRecord& op) {
    if (skip_ops_ > 0) {
      --skip_ops_;
      return;
    }
    out_->AddOp(rank_, op);
    ++ops_added_;
  }
  uint32_t NewFrame(model::Frame fr) {
    if (replayed_frames_ < replay_frames_.size()) return replay_frames_[replayed_frames_++];
    uint32_t id = out_->AddFrame(rank_, std::move(fr));
    frames_added_.push_back(id);
    return id;
  }
  // While entries stream: what they say, for Run to pass on after the header.
  bool deferring_ = false;
  struct Deferred {
    Sev severity;
    std::string message;
    int64_t offset;
  };
  std::vector<Deferred> deferred_;
  // Entries that appear more than once (FindShared), with their op once read.
  std::unordered_map<const void*, std::optional<model::OpRecord>> shared_;
  std::unordered_map<const void*, uint32_t> frame_ids_;
  struct FrameSlot {
    const void* key = nullptr;
    uint32_t id = 0;
  };
  FrameSlot frame_cache_[256];
  SeqCheck seqs_;
  bool seq_given_ = false;  // the last entry read had a collective_seq_id
  model::Shapes shapes_;
  model::Dtypes dtypes_;
  model::Stack stack_;
  // Pickle dumps memoise the keys: the same key comes back at the same
  // address, so a small address-keyed cache skips the lookup.
  struct KeySlot {
    const char* data = nullptr;
    size_t size = 0;
    int field = -1;
  };
  // 256 slots and a multiplicative hash: with 64 and the address's low
  // bits, some of an entry's ~20 keys shared a slot and evicted each other
  // in every entry (FieldByContent was 1.5 % of a dump's reading).
  KeySlot key_cache_[256];
  int FieldCached(std::string_view key) {
    if constexpr (!N::kMemoised) return FieldByContent(key);
    KeySlot& slot = key_cache_[(reinterpret_cast<uintptr_t>(key.data()) * 0x9E3779B97F4A7C15ull) >> 56];
    if (slot.data == key.data() && slot.size == key.size() && key.data()) return slot.field;
    slot = {key.data(), key.size(), FieldByContent(key)};
    return slot.field;
  }
  // JSON keys are at a new address each time: a cache by length and end
  // bytes, checked against the field's name, skips the hash of FieldOf.
  int field_by_content_[64];
  // No two of kFieldNames share a slot.
  static size_t ContentSlot(std::string_view s) {
    if (s.empty()) return 0;
    return (s.size() + static_cast<unsigned char>(s[0]) + static_cast<unsigned char>(s[s.size() / 2]) * 8 +
            static_cast<unsigned char>(s.back()) * 7) &
           63;
  }
  int FieldByContent(std::string_view key) {
    int& slot = field_by_content_[ContentSlot(key)];
    if (slot >= 0 && SameShortBytes(kFieldNames[slot], key)) return slot;
    int field = FieldOf(key);
    if (field >= 0) slot = field;
    return field;
  }
  // Interns string `s` of an entry. Pickle strings: by address
  // (Interner::StrFromBuffer); JSON strings, new addresses each time, by a
  // cache of the last interned string of the same length and bytes.
  std::string_view str_by_content_[64];
  std::string_view Str(std::string_view s) {
    if constexpr (N::kMemoised) return pool_.StrFromBuffer(s);
    std::string_view& slot = str_by_content_[ContentSlot(s)];
    if (slot.size() == s.size() && slot.data() && slot == s) return slot;
    slot = pool_.Str(s);
    return slot;
  }
  // The last distinct values of a field, interned, most recent first.
  template <class T>
  struct Recent {
    static constexpr size_t kSize = 8;
    model::Ref<T> refs[kSize];
    size_t n = 0;
    template <class Match>
    const model::Ref<T>* Find(Match match) const {
      for (size_t i = 0; i < n; ++i)
        if (match(*refs[i])) return &refs[i];
      return nullptr;
    }
    model::Ref<T> Put(model::Ref<T> r) {
      for (size_t i = std::min(n, kSize - 1); i > 0; --i) refs[i] = refs[i - 1];
      refs[0] = r;
      n = std::min(n + 1, kSize);
      return r;
    }
  };
  Recent<model::Shapes> recent_shapes_[2];  // input, output
  Recent<model::Dtypes> recent_dtypes_[2];
  Recent<model::Stack> recent_stacks_;
};

}  // namespace

int SniffFlightRecorderPickle(std::string_view data) { return LooksLikePickle(data) ? 100 : 0; }

int SniffFlightRecorderJson(std::string_view data) {
  size_t i = 0;
  while (i < data.size() && std::isspace(static_cast<unsigned char>(data[i]))) ++i;
  if (i >= data.size() || (data[i] != '{' && data[i] != '[')) return 0;
  // Decide from the head of the file, so a big dump is parsed once, not
  // twice. nlohmann writes keys sorted, so a dump begins with
  // "comm_lib_version" or "entries"; a truncated dump still counts (the
  // parser then says where it breaks). Below a device document's marker
  // (100), above a wait snapshot's keys (80).
  std::string_view head = data.substr(0, 4096);
  for (std::string_view key :
       {"\"entries\"", "\"pg_config\"", "\"pg_status\"", "\"comm_lib_version\"", "\"nccl_comm_state\"", "\"version\""})
    if (head.find(key) != std::string_view::npos) return 90;
  return 0;
}

namespace {

// Reads a pickle with the general machine (PickleDocument), its entries
// streamed into a converter; `after` (may be null) is the fast reader's
// converter that gave up on this file part way (Converter::Resume).
bool ReadWithMachine(const Artifact& in, RecordSink* out, const Converter<FNode>* after) {
  const model::Rank rank = in.rank_hint;
  // One document per parser thread: its memory is reused file after file.
  thread_local PickleDocument doc;
  PickleError err;
  // The entries are read as the pickle machine completes each, and their
  // values reused for the next: a dump's tree of values was 1.1 KB per
  // entry (23 MB at 20,000), all alive until the conversion ended. What a
  // file that turns out unreadable gave is dropped by the loader.
  Converter<PNode> conv(rank, out, in.rank_lists, in.data.size());
  if (after) conv.Resume(*after);
  struct Entries final : PickleItemSink {
    Converter<PNode>* conv;
    void Item(const PickleValue& item) override { conv->StreamEntry(PNode{&kPickleTree, &item}); }
  } entries;
  entries.conv = &conv;
  if (!doc.ParseViewStreaming(in.data, "entries", &entries, &err)) {
    out->Diag(Sev::kError,
              "unreadable pickle at byte " + std::to_string(err.offset) + " of " + std::to_string(in.data.size()) +
                  ": " + err.message,
              rank, err.offset);
    out->MarkUnreadable(rank);
    out->Strings(rank).ForgetAddresses();
    return false;
  }
  out->SetFromFlightRecorder(rank);
  bool ok = conv.Run(PNode{&kPickleTree, &doc.root()});
  out->Strings(rank).ForgetAddresses();  // the strings pointed into `in.data`
  if (!ok) out->MarkUnreadable(rank);
  return ok;
}

// Checks the start of a Flight Recorder pickle; false after saying why not.
bool Usable(const Artifact& in, RecordSink* out) {
  if (!in.data.empty()) return true;
  out->Diag(Sev::kError, "empty file", in.rank_hint, 0);
  out->MarkUnreadable(in.rank_hint);
  return false;
}

}  // namespace

namespace {

// Reads a pickle with the fast reader (flat_pickle.h), which reads what
// torch writes and declines the rest, which the general machine then reads
// from the start. `direct`: its entries go through the direct decoder
// (direct_pickle.h), those it declines as values.
bool ReadFlat(const Artifact& in, RecordSink* out, bool direct) {
  if (!Usable(in, out)) return false;
  const model::Rank rank = in.rank_hint;
  out->StreamFlightRecorderOps(rank);  // and cut as they come: no vector of every entry either
  thread_local FlatPickle flat;
  thread_local DirectDecoder decoder;
  decoder.Reset();
  FlatTree tree{&flat};
  Converter<FNode> conv(rank, out, in.rank_lists, in.data.size());
  struct Entries final : FlatEntrySink {
    Converter<FNode>* conv;
    const FlatTree* tree;
    DirectDecoder* decoder;  // null: no direct decoding
    void Entry(const FlatValue& item) override { conv->StreamEntry(FNode{tree, &item}); }
    bool TakesDirect() const override { return decoder != nullptr; }
    size_t Direct(FlatPickle* fp, std::string_view data, size_t at) override {
      const size_t end = decoder->Decode(fp, data, at);
      if (end && !conv->StreamDirect(decoder->entry())) {
        decoder->Undo(fp);
        return 0;
      }
      return end;
    }
  } entries;
  entries.conv = &conv;
  entries.tree = &tree;
  entries.decoder = direct ? &decoder : nullptr;
  if (!flat.Read(in.data, &entries)) {
    flat.Release();
    return ReadWithMachine(in, out, &conv);
  }
  out->SetFromFlightRecorder(rank);
  bool ok = conv.Run(FNode{&tree, &flat.root()});
  flat.Release();
  out->Strings(rank).ForgetAddresses();  // the strings pointed into `in.data`
  if (!ok) out->MarkUnreadable(rank);
  return ok;
}

}  // namespace

bool ParseFlightRecorderPickle(const Artifact& in, RecordSink* out) { return ReadFlat(in, out, true); }

bool ParseFlightRecorderPickleWithoutDirect(const Artifact& in, RecordSink* out) { return ReadFlat(in, out, false); }

bool ParseFlightRecorderPickleWithMachine(const Artifact& in, RecordSink* out) {
  if (!Usable(in, out)) return false;
  out->StreamFlightRecorderOps(in.rank_hint);
  return ReadWithMachine(in, out, nullptr);
}

namespace {

// The raw text of the value of top-level key `key` in the JSON object
// `data` (written without escapes, as torch writes its keys), or "" when
// the document is not an object, has no such key or has it twice, or
// anything looks odd: then the caller parses the whole text as usual. A
// byte scan aware of strings and nesting, no tokens built: about 1 GB/s.
std::string_view TopLevelValue(std::string_view data, std::string_view key) {
  size_t i = 0, n = data.size();
  auto ws = [&] {
    while (i < n && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t')) ++i;
  };
  auto skip_string = [&] {  // at '"'; after the closing quote, false when unterminated
    for (++i; i < n; ++i) {
      if (data[i] == '\\') {
        ++i;
      } else if (data[i] == '"') {
        ++i;
        return true;
      }
    }
    return false;
  };
  auto skip_value = [&] {
    if (i < n && data[i] == '"') return skip_string();
    int depth = 0;
    for (; i < n; ++i) {
      char c = data[i];
      if (c == '"') {
        if (!skip_string()) return false;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return true;  // the end of the enclosing object
        if (--depth == 0) {
          ++i;
          return true;
        }
      } else if (c == ',' && depth == 0) {
        return true;
      }
    }
    return depth == 0;
  };
  ws();
  if (i >= n || data[i] != '{') return {};
  ++i;
  std::string_view found;
  for (;;) {
    ws();
    if (i < n && data[i] == '}') return found;
    if (i >= n || data[i] != '"') return {};
    size_t k = i;
    if (!skip_string()) return {};
    std::string_view name = data.substr(k + 1, i - k - 2);
    ws();
    if (i >= n || data[i] != ':') return {};
    ++i;
    ws();
    size_t v = i;
    if (!skip_value()) return {};
    if (name == key) {
      if (!found.empty()) return {};  // twice: the parser's duplicate rules apply
      size_t end = i;
      while (end > v &&
             (data[end - 1] == ' ' || data[end - 1] == '\n' || data[end - 1] == '\r' || data[end - 1] == '\t'))
        --end;
      found = data.substr(v, end - v);
    }
    ws();
    if (i < n && data[i] == ',') {
      ++i;
      continue;
    }
    if (i < n && data[i] == '}') return found;
    return {};
  }
}

// Parses a Flight Recorder JSON dump, lexing its pg_config once per job:
// every rank of a job writes the same pg_config (with the default pg's
// whole member list), so when `cache` holds the parsed object for this
// very text, the document is parsed with "{}" in its place and the cached
// object put back (equal by construction). Anything unusual (a parse
// error, a duplicate key) is left to the plain parse of the whole text, so
// errors, offsets and warnings are the same as without the cache.
bool ParseDumpJson(std::string_view data, RankListCache* cache, nlohmann::json* j, std::string* error, int64_t* offset,
                   JsonDuplicates* dups) {
  std::string_view config = cache ? TopLevelValue(data, "pg_config") : std::string_view();
  if (config.size() >= 256 && config.front() == '{') {
    if (auto known = cache->Config(config)) {
      std::string rest;
      size_t at = static_cast<size_t>(config.data() - data.data());
      rest.reserve(data.size() - config.size() + 2);
      rest.append(data.substr(0, at)).append("{}").append(data.substr(at + config.size()));
      JsonDuplicates none;
      if (ParseJson(rest, j, error, offset, &none) && none.count == 0 && j->is_object() && (*j)["pg_config"].empty()) {
        (*j)["pg_config"] = *known;
        return true;
      }
      *j = nlohmann::json();
    }
  }
  if (!ParseJson(data, j, error, offset, dups)) return false;
  if (config.size() >= 256 && config.front() == '{' && dups->count == 0 && j->is_object() && j->contains("pg_config") &&
      (*j)["pg_config"].is_object())
    cache->KeepConfig(config, std::make_shared<const nlohmann::json>((*j)["pg_config"]));
  return true;
}

}  // namespace

bool ParseFlightRecorderJson(const Artifact& in, RecordSink* out) {
  const model::Rank rank = in.rank_hint;
  // simdjson first: 5 times the speed. What it does not read as nlohmann
  // would (a syntax error, a repeated key: JsonTree) goes to the reader
  // below, which says what is wrong as it always did.
  thread_local JsonTree tree;
  if (tree.Parse(in.data)) {
    out->SetFromFlightRecorder(rank);
    out->StreamFlightRecorderOps(rank);
    Converter<TNode> conv(rank, out, in.rank_lists, in.data.size());
    bool ok = conv.Run(TNode{&tree, &tree.root()});
    out->Strings(rank).ForgetAddresses();
    if (in.data.size() > kKeepTreeBytes) tree.Release();
    if (!ok) out->MarkUnreadable(rank);
    return ok;
  }
  return ParseFlightRecorderJsonWithNlohmann(in, out);
}

bool ParseFlightRecorderJsonWithNlohmann(const Artifact& in, RecordSink* out) {
  const model::Rank rank = in.rank_hint;
  nlohmann::json j;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  if (!ParseDumpJson(in.data, in.rank_lists, &j, &error, &offset, &dups)) {
    out->Diag(Sev::kError, std::move(error), rank, offset);
    out->MarkUnreadable(rank);
    return false;
  }
  WarnDuplicateKeys(dups, rank, out);
  out->SetFromFlightRecorder(rank);
  out->StreamFlightRecorderOps(rank);
  Converter<JNode> conv(rank, out, in.rank_lists, in.data.size());
  bool ok = conv.Run(JNode{&j});
  out->Strings(rank).ForgetAddresses();
  if (!ok) out->MarkUnreadable(rank);
  return ok;
}

}  // namespace hangdx::ingest
