#include "hangdx/ingest/formats/flight_recorder/pickle.h"

#include <charconv>
#include <cstring>
#include <deque>
#include <string>

namespace hangdx::ingest {
namespace {

// The one empty container that unshared empty lists, tuples, dicts and sets
// point to. The machine never adds to it: a container gets its own storage
// when it is first filled, memoised or duplicated (Machine::Own).
PickleContainer* SharedEmpty() {
  static PickleContainer empty;
  return &empty;
}

}  // namespace

PickleValue PickleValue::Float(double f) {
  PickleValue v;
  v.kind_ = static_cast<uint64_t>(Kind::kFloat);
  v.u_.f = f;
  return v;
}

PickleValue PickleValue::Text(Kind kind, std::string_view s) {
  PickleValue v;
  v.kind_ = static_cast<uint64_t>(kind);
  v.size_ = s.size();
  v.u_.p = s.data();
  return v;
}

PickleValue PickleValue::Container(Kind kind, PickleContainer* c) {
  PickleValue v;
  v.kind_ = static_cast<uint64_t>(kind);
  v.u_.c = c;
  return v;
}

std::string_view PickleValue::s() const {
  Kind k = kind();
  if (k != Kind::kStr && k != Kind::kBytes && k != Kind::kBigInt) return {};
  return {u_.p, static_cast<size_t>(size_)};
}

const PickleValue* PickleValue::Get(std::string_view key) const {
  if (kind() != Kind::kDict) return nullptr;
  const auto& it = u_.c->items;
  for (size_t i = 0; i + 1 < it.size(); i += 2)
    if (it[i].kind() == Kind::kStr && it[i].s() == key) return &it[i + 1];
  return nullptr;
}

size_t PickleValue::size() const {
  switch (kind()) {
    case Kind::kDict:
      return u_.c->items.size() / 2;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kSet:
      return u_.c->items.size();
    default:
      return 0;
  }
}

bool LooksLikePickle(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x80 && data[1] >= 2 && data[1] <= 5;
}

namespace {

const char* OpcodeName(unsigned char op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

std::string Hex(unsigned char op) {
  static const char* d = "0123456789abcdef";
  return std::string("0x") + d[op >> 4] + d[op & 15];
}

class Machine {
 public:
  Machine(std::string_view data, PickleScratch* scratch)
      : d_(data),
        arena_(&scratch->arena),
        used_(scratch->used),
        stack_(scratch->stack),
        marks_(scratch->marks),
        memo_(scratch->memo),
        memo_set_(scratch->memo_set) {}

  bool Run(PickleValue* root, int* protocol, PickleError* err);

 private:
  bool Fail(std::string msg) {
    err_->offset = static_cast<int64_t>(op_pos_);
    err_->message = std::move(msg);
    return false;
  }
  bool Need(size_t n, const char* what) {
    if (d_.size() - pos_ < n)
      return Fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
                  std::to_string(d_.size() - pos_) + " left");
    return true;
  }
  uint64_t ReadLE(size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(d_[pos_ + k])) << (8 * k);
    pos_ += n;
    return v;
  }
  bool ReadLine(std::string_view* line) {
    size_t nl = d_.find('\n', pos_);
    if (nl == std::string_view::npos) return Fail("truncated: text operand without newline");
    *line = d_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return true;
  }
  PickleContainer* NewContainer() {
    if (used_ < arena_->size()) {
      PickleContainer* c = &(*arena_)[used_++];
      c->items.clear();  // keeps its capacity
      return c;
    }
    ++used_;
    return &arena_->emplace_back();
  }
  // An empty container of kind `k` that owns no storage yet (SharedEmpty).
  static PickleValue EmptyContainer(PickleValue::Kind k) { return PickleValue::Container(k, SharedEmpty()); }
  // Gives *v (a container) storage of its own before it is filled or shared.
  PickleContainer* Own(PickleValue* v) {
    if (v->c() == SharedEmpty()) *v = PickleValue::Container(v->kind(), NewContainer());
    return v->c();
  }
  // A container of kind `k` holding stack_[from, end), which leave the stack.
  PickleValue Collect(PickleValue::Kind k, size_t from) {
    if (from == stack_.size()) return EmptyContainer(k);
    PickleValue v = PickleValue::Container(k, NewContainer());
    v.c()->items.assign(stack_.begin() + from, stack_.end());
    stack_.resize(from);
    return v;
  }
  bool PopMark(size_t* mark) {
    if (marks_.empty()) return Fail("no MARK on the stack");
    *mark = marks_.back();
    marks_.pop_back();
    if (*mark > stack_.size()) return Fail("MARK above the stack top");
    return true;
  }
  bool Top(PickleValue** v) {
    if (stack_.size() <= BaseIndex()) return Fail("stack underflow");
    *v = &stack_.back();
    return true;
  }
  size_t BaseIndex() const { return marks_.empty() ? 0 : marks_.back(); }
  bool Pop(PickleValue* v) {
    if (stack_.size() <= BaseIndex()) return Fail("stack underflow");
    *v = stack_.back();
    stack_.pop_back();
    return true;
  }
  bool Memoize(uint64_t idx) {
    if (stack_.empty()) return Fail("memo store with an empty stack");
    if (idx > d_.size()) return Fail("memo index " + std::to_string(idx) + " out of range");
    if (memo_.size() <= idx) {
      memo_.resize(idx + 1);
      memo_set_.resize(idx + 1, false);
    }
    if (stack_.back().is_container()) Own(&stack_.back());  // the memo and the stack share it
    memo_[idx] = stack_.back();
    memo_set_[idx] = true;
    return true;
  }
  bool Fetch(uint64_t idx) {
    if (idx >= memo_.size() || !memo_set_[idx]) return Fail("memo key " + std::to_string(idx) + " was never stored");
    stack_.push_back(memo_[idx]);
    return true;
  }
  bool PushInt(int64_t v) {
    stack_.push_back(PickleValue::Int(v));
    return true;
  }
  bool PushLong(size_t n) {
    if (!Need(n, "LONG")) return false;
    if (n <= 8) {
      uint64_t u = ReadLE(n);
      if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);
      stack_.push_back(PickleValue::Int(static_cast<int64_t>(u)));
    } else {
      stack_.push_back(PickleValue::Text(PickleValue::Kind::kBigInt, d_.substr(pos_, n)));
      pos_ += n;
    }
    return true;
  }
  bool PushStr(size_t n, PickleValue::Kind kind, const char* what) {
    if (!Need(n, what)) return false;
    stack_.push_back(PickleValue::Text(kind, d_.substr(pos_, n)));
    pos_ += n;
    return true;
  }

  std::string_view d_;
  std::deque<PickleContainer>* arena_;
  size_t& used_;
  size_t pos_ = 0, op_pos_ = 0;
  std::vector<PickleValue>& stack_;
  std::vector<size_t>& marks_;
  std::vector<PickleValue>& memo_;
  std::vector<bool>& memo_set_;
  PickleError* err_ = nullptr;
};

bool Machine::Run(PickleValue* root, int* protocol, PickleError* err) {
  err_ = err;
  using K = PickleValue::Kind;
  while (true) {
    op_pos_ = pos_;
    if (pos_ >= d_.size()) return Fail("truncated: pickle ended before STOP");
    unsigned char op = static_cast<unsigned char>(d_[pos_++]);
    if (const char* refused = OpcodeName(op))
      return Fail(std::string("refused opcode ") + refused + " (" + Hex(op) +
                  "): it would import, call or build objects; hangdx reads only plain data");
    switch (op) {
      case 0x80: {  // PROTO
        if (!Need(1, "PROTO")) return false;
        *protocol = static_cast<unsigned char>(d_[pos_++]);
        if (*protocol > 5) return Fail("unsupported pickle protocol " + std::to_string(*protocol));
        break;
      }
      case 0x95:  // FRAME: length is advisory
        if (!Need(8, "FRAME")) return false;
        pos_ += 8;
        break;
      case '.': {  // STOP
        if (stack_.size() != 1 || !marks_.empty())
          return Fail("STOP with " + std::to_string(stack_.size()) + " values and " + std::to_string(marks_.size()) +
                      " marks on the stack (want 1 and 0)");
        *root = stack_.back();
        return true;
      }
      case '(':
        marks_.push_back(stack_.size());
        break;
      case '0': {
        PickleValue v;
        if (!Pop(&v)) return false;
        break;
      }
      case '1': {
        size_t m;
        if (!PopMark(&m)) return false;
        stack_.resize(m);
        break;
      }
      case '2': {  // DUP: the copy shares the container
        PickleValue* t;
        if (!Top(&t)) return false;
        if (t->is_container()) Own(t);
        stack_.push_back(*t);
        break;
      }
      case 'N':
        stack_.push_back(PickleValue{});
        break;
      case 0x88:
      case 0x89:
        stack_.push_back(PickleValue::Bool(op == 0x88));
        break;
      case 'J':
        if (!Need(4, "BININT")) return false;
        PushInt(static_cast<int32_t>(static_cast<uint32_t>(ReadLE(4))));
        break;
      case 'K':
        if (!Need(1, "BININT1")) return false;
        PushInt(static_cast<int64_t>(ReadLE(1)));
        break;
      case 'M':
        if (!Need(2, "BININT2")) return false;
        PushInt(static_cast<int64_t>(ReadLE(2)));
        break;
      case 0x8a:
        if (!Need(1, "LONG1")) return false;
        if (!PushLong(ReadLE(1))) return false;
        break;
      case 0x8b: {
        if (!Need(4, "LONG4")) return false;
        uint64_t n = static_cast<uint32_t>(ReadLE(4));
        if (n > d_.size()) return Fail("LONG4 length " + std::to_string(n) + " beyond the input");
        if (!PushLong(n)) return false;
        break;
      }
      case 'I':
      case 'L': {  // text INT / LONG (protocol 0/1)
        std::string_view line;
        if (!ReadLine(&line)) return false;
        if (op == 'L' && !line.empty() && line.back() == 'L') line.remove_suffix(1);
        if (line == "00" || line == "01") {
          stack_.push_back(PickleValue::Bool(line == "01"));
          break;
        }
        int64_t v;
        auto r = std::from_chars(line.data(), line.data() + line.size(), v);
        if (r.ec != std::errc() || r.ptr != line.data() + line.size()) return Fail("malformed text integer");
        PushInt(v);
        break;
      }
      case 'F': {
        std::string_view line;
        if (!ReadLine(&line)) return false;
        std::string tmp(line);
        char* end = nullptr;
        double v = std::strtod(tmp.c_str(), &end);
        if (tmp.empty() || end != tmp.c_str() + tmp.size()) return Fail("malformed text float");
        stack_.push_back(PickleValue::Float(v));
        break;
      }
      case 'G': {
        if (!Need(8, "BINFLOAT")) return false;
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | static_cast<unsigned char>(d_[pos_ + k]);
        pos_ += 8;
        double f;
        std::memcpy(&f, &u, 8);  // big-endian IEEE double
        stack_.push_back(PickleValue::Float(f));
        break;
      }
      case 'X': {
        if (!Need(4, "BINUNICODE")) return false;
        if (!PushStr(ReadLE(4), K::kStr, "BINUNICODE")) return false;
        break;
      }
      case 0x8c:
        if (!Need(1, "SHORT_BINUNICODE")) return false;
        if (!PushStr(ReadLE(1), K::kStr, "SHORT_BINUNICODE")) return false;
        break;
      case 0x8d: {
        if (!Need(8, "BINUNICODE8")) return false;
        uint64_t n = ReadLE(8);
        if (n > d_.size()) return Fail("BINUNICODE8 length beyond the input");
        if (!PushStr(n, K::kStr, "BINUNICODE8")) return false;
        break;
      }
      case 'T':  // BINSTRING (py2 str): treated as text
        if (!Need(4, "BINSTRING")) return false;
        if (!PushStr(static_cast<uint32_t>(ReadLE(4)), K::kStr, "BINSTRING")) return false;
        break;
      case 'U':
        if (!Need(1, "SHORT_BINSTRING")) return false;
        if (!PushStr(ReadLE(1), K::kStr, "SHORT_BINSTRING")) return false;
        break;
      case 'B':
        if (!Need(4, "BINBYTES")) return false;
        if (!PushStr(static_cast<uint32_t>(ReadLE(4)), K::kBytes, "BINBYTES")) return false;
        break;
      case 'C':
        if (!Need(1, "SHORT_BINBYTES")) return false;
        if (!PushStr(ReadLE(1), K::kBytes, "SHORT_BINBYTES")) return false;
        break;
      case 0x8e:
      case 0x96: {
        if (!Need(8, "BINBYTES8")) return false;
        uint64_t n = ReadLE(8);
        if (n > d_.size()) return Fail("BINBYTES8 length beyond the input");
        if (!PushStr(n, K::kBytes, "BINBYTES8")) return false;
        break;
      }
      case ']':
        stack_.push_back(EmptyContainer(K::kList));
        break;
      case ')':
        stack_.push_back(EmptyContainer(K::kTuple));
        break;
      case '}':
        stack_.push_back(EmptyContainer(K::kDict));
        break;
      case 0x8f:
        stack_.push_back(EmptyContainer(K::kSet));
        break;
      case 'l':
      case 't':
      case 'd':
      case 0x91: {  // LIST, TUPLE, DICT, FROZENSET from MARK
        size_t m;
        if (!PopMark(&m)) return false;
        K kind = op == 'l' ? K::kList : op == 't' ? K::kTuple : op == 'd' ? K::kDict : K::kSet;
        if (kind == K::kDict && (stack_.size() - m) % 2) return Fail("DICT with an odd number of items");
        PickleValue v = Collect(kind, m);
        stack_.push_back(v);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        size_t n = op - 0x84;
        if (stack_.size() < BaseIndex() + n) return Fail("stack underflow in TUPLE" + std::to_string(n));
        PickleValue v = Collect(K::kTuple, stack_.size() - n);
        stack_.push_back(v);
        break;
      }
      case 'a': {  // APPEND
        PickleValue item;
        if (!Pop(&item)) return false;
        PickleValue* list;
        if (!Top(&list)) return false;
        if (list->kind() != K::kList) return Fail("APPEND to a non-list");
        Own(list)->items.push_back(item);
        break;
      }
      case 'e':
      case 'u':
      case 0x90: {  // APPENDS, SETITEMS, ADDITEMS
        size_t m;
        if (!PopMark(&m)) return false;
        if (m == 0 || m <= BaseIndex()) return Fail("no container below MARK");
        PickleValue& target = stack_[m - 1];
        K want = op == 'e' ? K::kList : op == 'u' ? K::kDict : K::kSet;
        if (target.kind() != want) return Fail("container of the wrong kind below MARK");
        if (op == 'u' && (stack_.size() - m) % 2) return Fail("SETITEMS with an odd number of items");
        if (stack_.size() > m) {
          PickleContainer* items = Own(&target);
          items->items.insert(items->items.end(), stack_.begin() + m, stack_.end());
        }
        stack_.resize(m);
        break;
      }
      case 's': {  // SETITEM
        PickleValue k, v;
        if (!Pop(&v) || !Pop(&k)) return false;
        PickleValue* dict;
        if (!Top(&dict)) return false;
        if (dict->kind() != K::kDict) return Fail("SETITEM on a non-dict");
        PickleContainer* items = Own(dict);
        items->items.push_back(k);
        items->items.push_back(v);
        break;
      }
      case 'q':
        if (!Need(1, "BINPUT")) return false;
        if (!Memoize(ReadLE(1))) return false;
        break;
      case 'r':
        if (!Need(4, "LONG_BINPUT")) return false;
        if (!Memoize(ReadLE(4))) return false;
        break;
      case 0x94:
        if (!Memoize(memo_.size())) return false;
        break;
      case 'h':
        if (!Need(1, "BINGET")) return false;
        if (!Fetch(ReadLE(1))) return false;
        break;
      case 'j':
        if (!Need(4, "LONG_BINGET")) return false;
        if (!Fetch(ReadLE(4))) return false;
        break;
      case 'p':
      case 'g': {  // text PUT / GET
        std::string_view line;
        if (!ReadLine(&line)) return false;
        uint64_t idx;
        auto r = std::from_chars(line.data(), line.data() + line.size(), idx);
        if (r.ec != std::errc() || r.ptr != line.data() + line.size()) return Fail("malformed memo key");
        if (!(op == 'p' ? Memoize(idx) : Fetch(idx))) return false;
        break;
      }
      default:
        return Fail("unknown or unsupported opcode " + Hex(op));
    }
  }
}

}  // namespace

namespace {

// Scratch past this many elements is freed rather than kept for the next
// file: a document lives as long as its parser thread, and one hostile
// pickle must not pin its peak memory for the rest of the load.
constexpr size_t kKeptScratch = size_t{1} << 16;

template <typename V>
void ClearScratch(V* v) {
  if (v->capacity() > kKeptScratch)
    V().swap(*v);
  else
    v->clear();
}

}  // namespace

bool PickleDocument::Run(std::string_view data, PickleError* err) {
  PickleScratch& sc = *scratch_;
  sc.used = 0;
  if (sc.arena.size() > kKeptScratch) std::deque<PickleContainer>().swap(sc.arena);
  ClearScratch(&sc.stack);  // also after a parse that ran out of memory
  ClearScratch(&sc.marks);
  ClearScratch(&sc.memo);
  ClearScratch(&sc.memo_set);
  root_ = PickleValue{};
  protocol_ = 0;
  Machine m(data, &sc);
  bool ok = m.Run(&root_, &protocol_, err);
  // The values are reached from root_ now (containers live in the arena):
  // the stack and the memo are done with.
  ClearScratch(&sc.stack);
  ClearScratch(&sc.marks);
  ClearScratch(&sc.memo);
  ClearScratch(&sc.memo_set);
  return ok;
}

bool PickleDocument::Parse(std::string data, PickleError* err) {
  data_ = std::make_unique<std::string>(std::move(data));
  return Run(*data_, err);
}

bool PickleDocument::ParseView(std::string_view data, PickleError* err) {
  data_.reset();
  return Run(data, err);
}

}  // namespace hangdx::ingest
