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

const PickleValue* PickleValue::Get(std::string_view key) const {
  if (kind() != Kind::kDict) return nullptr;
  const auto& it = u_.c->items;
  for (size_t i = 0; i + 1 < it.size(); i += 2)
    if (it[i].kind() == Kind::kStr && it[i].s() == key) return &it[i + 1];
  return nullptr;
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

// The memo keys a pickle reads back (BINGET, LONG_BINGET, GET), as a
// bitmap with ranks: a streamed parse stores only those, one slot each.
class MemoKeys {
 public:
  void Add(uint64_t key) {
    if (key / 64 >= words_.size()) words_.resize(key / 64 + 1, 0);
    words_[key / 64] |= uint64_t{1} << (key % 64);
  }
  // Ends adding: makes Rank O(1).
  void Seal() {
    ranks_.resize(words_.size());
    uint32_t n = 0;
    for (size_t w = 0; w < words_.size(); ++w) {
      ranks_[w] = n;
      n += static_cast<uint32_t>(Bits(words_[w]));
    }
  }
  // Set bits of `w`, inline: __builtin_popcountll is a libgcc call without
  // -mpopcnt, and a memo fetch (one per repeated key of every entry) asks.
  static uint64_t Bits(uint64_t w) {
    w = w - ((w >> 1) & 0x5555555555555555ull);
    w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
    w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (w * 0x0101010101010101ull) >> 56;
  }
  bool Has(uint64_t key) const { return key / 64 < words_.size() && (words_[key / 64] >> (key % 64)) & 1; }
  // Keys read back below `key`.
  uint64_t Rank(uint64_t key) const {
    uint64_t below = words_[key / 64] & ((uint64_t{1} << (key % 64)) - 1);
    return ranks_[key / 64] + Bits(below);
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint32_t> ranks_;
};

// Walks the opcodes of `d` (operands skipped, no values built) and notes
// the memo keys read back. False, with nothing to trust, for anything the
// machine would refuse or find truncated, or a key beyond the input: the
// plain parse then reads the pickle and says why.
bool FetchedMemoKeys(std::string_view d, MemoKeys* keys) {
  size_t pos = 0;
  auto le = [&](size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(d[pos + k])) << (8 * k);
    pos += n;
    return v;
  };
  auto skip = [&](size_t n) {  // n bytes of operand
    if (d.size() - pos < n) return false;
    pos += n;
    return true;
  };
  auto sized = [&](size_t n) {  // an n-byte length, then that many bytes
    if (d.size() - pos < n) return false;
    return skip(le(n));
  };
  auto key = [&](uint64_t k) {
    if (k > d.size()) return false;
    keys->Add(k);
    return true;
  };
  while (pos < d.size()) {
    unsigned char op = static_cast<unsigned char>(d[pos++]);
    bool ok = true;
    switch (op) {
      case '.':
        keys->Seal();
        return true;
      case '(':
      case '0':
      case '1':
      case '2':
      case 'N':
      case 0x88:
      case 0x89:
      case ']':
      case ')':
      case '}':
      case 0x8f:
      case 'l':
      case 't':
      case 'd':
      case 0x91:
      case 0x85:
      case 0x86:
      case 0x87:
      case 'a':
      case 'e':
      case 'u':
      case 0x90:
      case 's':
      case 0x94:
        break;
      case 0x80:
      case 'K':
      case 'q':
        ok = skip(1);
        break;
      case 'M':
        ok = skip(2);
        break;
      case 'J':
      case 'r':
        ok = skip(4);
        break;
      case 0x95:
      case 'G':
        ok = skip(8);
        break;
      case 0x8a:
      case 0x8c:
      case 'U':
      case 'C':
        ok = sized(1);
        break;
      case 0x8b:
      case 'X':
      case 'T':
      case 'B':
        ok = sized(4);
        break;
      case 0x8d:
      case 0x8e:
      case 0x96:
        ok = sized(8);
        break;
      case 'h':
        ok = d.size() - pos >= 1 && key(le(1));
        break;
      case 'j':
        ok = d.size() - pos >= 4 && key(le(4));
        break;
      case 'I':
      case 'L':
      case 'F':
      case 'p':
      case 'g': {
        size_t nl = d.find('\n', pos);
        if (nl == std::string_view::npos) return false;
        std::string_view line = d.substr(pos, nl - pos);
        pos = nl + 1;
        if (op == 'g') {
          uint64_t k;
          auto r = std::from_chars(line.data(), line.data() + line.size(), k);
          ok = r.ec == std::errc() && r.ptr == line.data() + line.size() && key(k);
        }
        break;
      }
      default:
        return false;  // refused or unknown: the machine says which
    }
    if (!ok) return false;
  }
  return false;  // no STOP
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
        memo_set_(scratch->memo_set),
        memo_serial_(scratch->memo_serial),
        free_(scratch->free) {}

  // Streams the list under top-level key `key` into *sink (see
  // PickleDocument::ParseViewStreaming); `fetched` (FetchedMemoKeys of the
  // same data) says which memo keys are ever read back.
  void Stream(std::string_view key, PickleItemSink* sink, const MemoKeys* fetched) {
    key_ = key;
    sink_ = sink;
    fetched_ = fetched;
    state_ = StreamState::kLooking;
  }
  size_t streamed() const { return streamed_; }

  bool Run(PickleValue* root, int* protocol, PickleError* err);

 private:
  bool Fail(std::string msg) {
    err_->offset = static_cast<int64_t>(op_pos_);
    err_->message = std::move(msg);
    return false;
  }
  // Whether `n` more bytes are there (an operand of `what`); the failure is
  // out of line, so that the check inlines into every opcode's operand read.
  bool Need(size_t n, const char* what) { return d_.size() - pos_ >= n || Truncated(n, what); }
  [[gnu::noinline]] bool Truncated(size_t n, const char* what) {
    return Fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
                std::to_string(d_.size() - pos_) + " left");
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
    PickleContainer* c;
    if (!free_.empty()) {  // a streamed item's, handed over (Recycle)
      c = free_.back();
      free_.pop_back();
    } else if (used_ < arena_->size()) {
      c = &(*arena_)[used_++];
      c->items.clear();  // keeps its capacity
    } else {
      ++used_;
      c = &arena_->emplace_back();
    }
    if (!sink_) {  // a plain parse: every container stable (one a streamed parse reused may say otherwise)
      c->serial = 0;
      c->stable = 1;
      return c;
    }
    c->serial = next_serial_++;
    // Only what a streamed item makes is ever reused: the rest is stable.
    c->stable = state_ == StreamState::kActive ? 0 : 1;
    if (state_ == StreamState::kActive) made_.push_back(c);
    return c;
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
    // Items before this MARK were handed over as the streamed list's: a
    // pickle that makes them anything else cannot be read by streaming
    // (Python and torch never write one).
    if (state_ == StreamState::kActive && *mark == item_mark_)
      return Fail("the MARK of the streamed list's items is closed by another opcode than APPENDS");
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
    memo_len_ = std::max<uint64_t>(memo_len_, idx + 1);
    if (stack_.back().is_container()) Own(&stack_.back());  // the memo and the stack share it
    if (sink_) {
      // A streamed parse keeps only the keys read back (one slot each, by
      // rank), and a container they hold outlives its item.
      if (!fetched_->Has(idx)) return true;
      idx = fetched_->Rank(idx);
      if (stack_.back().is_container()) stack_.back().c()->stable = 1;
    }
    if (memo_.size() <= idx) {
      memo_.resize(idx + 1);
      memo_set_.resize(idx + 1, false);
      if (sink_) memo_serial_.resize(idx + 1, 0);
    }
    memo_[idx] = stack_.back();
    memo_set_[idx] = true;
    if (sink_) memo_serial_[idx] = stack_.back().is_container() ? stack_.back().c()->serial : 1;
    return true;
  }
  bool Fetch(uint64_t idx) {
    if (sink_) return FetchStreamed(idx);
    if (idx >= memo_.size() || !memo_set_[idx]) return NeverStored(idx);
    stack_.push_back(memo_[idx]);
    return true;
  }
  // Fetch in a streamed parse, where a fetch of every repeated key of every
  // entry passes: memo_serial_ says whether a slot was stored (0: not; a
  // container's serial when stored, 1 for other values).
  bool FetchStreamed(uint64_t key) {
    const uint64_t idx = fetched_->Has(key) ? fetched_->Rank(key) : memo_.size();
    if (idx >= memo_serial_.size() || memo_serial_[idx] == 0) return NeverStored(key);
    const PickleValue& v = memo_[idx];
    // A container reused since it was stored (which FetchedMemoKeys rules
    // out) is refused rather than read.
    if (v.is_container() && v.c()->serial != memo_serial_[idx]) return Reused(key);
    stack_.push_back(v);
    return true;
  }
  [[gnu::noinline, gnu::cold]] bool NeverStored(uint64_t key) {
    return Fail("memo key " + std::to_string(key) + " was never stored");
  }
  [[gnu::noinline, gnu::cold]] bool Reused(uint64_t key) {
    return Fail("memo key " + std::to_string(key) + " names a streamed item's value");
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

  // ---- Streaming (ParseViewStreaming). --------------------------------
  // kLooking: the list is not met yet; kListed: it is on the stack at
  // list_index_, no MARK of items open; kActive: its items' MARK is open at
  // item_mark_; kOff: not (or no longer) streaming.
  enum class StreamState { kOff, kLooking, kListed, kActive };
  void StreamListPushed();
  void StreamMarkPushed();
  void StreamStep();
  void StreamTarget(const PickleValue& target);
  void HandOver(size_t count, size_t made, uint64_t serial_end);

  std::string_view d_;
  std::deque<PickleContainer>* arena_;
  size_t& used_;
  size_t pos_ = 0, op_pos_ = 0;
  std::vector<PickleValue>& stack_;
  std::vector<size_t>& marks_;
  std::vector<PickleValue>& memo_;
  std::vector<bool>& memo_set_;
  uint64_t memo_len_ = 0;  // highest memo key stored + 1 (MEMOIZE's next key)
  PickleError* err_ = nullptr;

  std::vector<uint64_t>& memo_serial_;  // per slot: its container's serial when stored
  std::vector<PickleContainer*>& free_;
  std::string_view key_;
  PickleItemSink* sink_ = nullptr;
  const MemoKeys* fetched_ = nullptr;
  StreamState state_ = StreamState::kOff;
  size_t list_index_ = 0, item_mark_ = 0;
  uint64_t next_serial_ = 1;
  std::vector<PickleContainer*> made_;  // containers made since the current item began
  uint64_t item_serial_begin_ = 0;      // the first serial the current item may have made
  size_t item_made_ = 0;                // of made_, those the item on the stack made, when it was last alone
  uint64_t item_serial_end_ = 0;        // next_serial_ then
  size_t streamed_ = 0;
};

// Starts streaming at an EMPTY_LIST just pushed as the value of the first
// `key_` of the top-level dict: the root dict at the stack's bottom, its
// MARK open alone, the list at an even offset after it.
void Machine::StreamListPushed() {
  if (state_ != StreamState::kLooking) return;
  const size_t i = stack_.size() - 1;
  if (marks_.size() != 1 || marks_[0] != 1 || !stack_[0].is_dict() || i < 2 || i % 2) return;
  const PickleValue& k = stack_[i - 1];
  if (k.kind() != PickleValue::Kind::kStr || k.s() != key_) return;
  // An earlier `key_` is the one a reader of the dict gets: not this list.
  auto earlier = [&](const PickleValue& v) { return v.kind() == PickleValue::Kind::kStr && v.s() == key_; };
  const auto& done = stack_[0].c()->items;
  for (size_t j = 0; j < done.size(); j += 2)
    if (earlier(done[j])) return void(state_ = StreamState::kOff);
  for (size_t j = 1; j + 1 < i; j += 2)
    if (earlier(stack_[j])) return void(state_ = StreamState::kOff);
  state_ = StreamState::kListed;
  list_index_ = i;
}

// A MARK just pushed right above the streamed list opens a batch of items.
void Machine::StreamMarkPushed() {
  if (state_ != StreamState::kListed || marks_.size() != 2 || stack_.size() != list_index_ + 1) return;
  state_ = StreamState::kActive;
  item_mark_ = stack_.size();
  made_.clear();
  item_serial_begin_ = next_serial_;
  item_made_ = 0;
  item_serial_end_ = next_serial_;
}

// Before each opcode: hands the first item of an open batch over once a
// second one stands beside it (a dict next to a dict: a value pushed next
// to a dict may still go into it, by SETITEM), and notes what the item
// made while it stands alone.
void Machine::StreamStep() {
  if ((state_ == StreamState::kListed || state_ == StreamState::kActive) && stack_.size() <= list_index_) {
    state_ = StreamState::kOff;  // the list left the stack (into the root dict)
    return;
  }
  if (state_ != StreamState::kActive || marks_.size() != 2 || marks_[1] != item_mark_) return;
  if (stack_.size() == item_mark_ + 1) {
    item_made_ = made_.size();
    item_serial_end_ = next_serial_;
  } else if (stack_.size() == item_mark_ + 2 && stack_[item_mark_].is_dict() && stack_[item_mark_ + 1].is_dict()) {
    HandOver(1, item_made_, item_serial_end_);
    item_made_ = made_.size();
    item_serial_end_ = next_serial_;
  }
}

// A container about to take values during an item: one made before the
// item (fetched from the memo) would then hold the item's containers,
// which reuse could not see, so streaming stops (what is streamed stays).
void Machine::StreamTarget(const PickleValue& target) {
  if (state_ == StreamState::kActive && target.c() && target.c()->serial < item_serial_begin_)
    state_ = StreamState::kOff;
}

// Hands the batch's first `count` items to the sink, in order, and reuses
// the first `made` containers made since they began (serials below
// `serial_end`) that are not stable, nor held by a stable one.
void Machine::HandOver(size_t count, size_t made, uint64_t serial_end) {
  for (size_t k = 0; k < count; ++k) sink_->Item(stack_[item_mark_ + k]);
  streamed_ += count;
  stack_.erase(stack_.begin() + static_cast<std::ptrdiff_t>(item_mark_),
               stack_.begin() + static_cast<std::ptrdiff_t>(item_mark_ + count));
  const uint64_t serial_begin = item_serial_begin_;
  item_serial_begin_ = serial_end;
  std::vector<PickleContainer*> keep;
  for (size_t k = 0; k < made; ++k)
    if (made_[k]->stable) keep.push_back(made_[k]);
  while (!keep.empty()) {  // what a stable container holds is stable
    PickleContainer* c = keep.back();
    keep.pop_back();
    for (const PickleValue& v : c->items) {
      PickleContainer* child = v.c();
      if (!child || child->stable || child->serial < serial_begin || child->serial >= serial_end) continue;
      child->stable = 1;
      keep.push_back(child);
    }
  }
  for (size_t k = 0; k < made; ++k) {
    PickleContainer* c = made_[k];
    if (c->stable) continue;
    c->serial = 0;  // a memo slot that held it no longer matches (Fetch)
    if (c->items.capacity() > 1024) std::vector<PickleValue>().swap(c->items);
    c->items.clear();
    free_.push_back(c);
  }
  made_.erase(made_.begin(), made_.begin() + static_cast<std::ptrdiff_t>(made));
}

bool Machine::Run(PickleValue* root, int* protocol, PickleError* err) {
  err_ = err;
  using K = PickleValue::Kind;
  while (true) {
    if (sink_) StreamStep();
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
        if (sink_) StreamMarkPushed();
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
        if (t->is_container()) {
          Own(t)->stable = 1;  // two references: never reused
        }
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
        if (sink_) StreamListPushed();
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
        // An item added to the streamed list itself ends the streaming:
        // the list then holds it and those after it, in order.
        if (state_ == StreamState::kListed && stack_.size() == list_index_ + 1) state_ = StreamState::kOff;
        Own(list)->items.push_back(item);
        StreamTarget(*list);
        break;
      }
      case 'e':
      case 'u':
      case 0x90: {  // APPENDS, SETITEMS, ADDITEMS
        if (op == 'e' && state_ == StreamState::kActive && !marks_.empty() && marks_.back() == item_mark_) {
          // The end of a batch of the streamed list: its items go to the
          // sink, and the list gets none of them.
          HandOver(stack_.size() - item_mark_, made_.size(), next_serial_);
          state_ = StreamState::kListed;
        }
        size_t m;
        if (!PopMark(&m)) return false;
        if (m == 0 || m <= BaseIndex()) return Fail("no container below MARK");
        PickleValue& target = stack_[m - 1];
        K want = op == 'e' ? K::kList : op == 'u' ? K::kDict : K::kSet;
        if (target.kind() != want) return Fail("container of the wrong kind below MARK");
        if (op == 'u' && (stack_.size() - m) % 2) return Fail("SETITEMS with an odd number of items");
        if (stack_.size() > m) {
          PickleContainer* items = Own(&target);
          StreamTarget(target);
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
        StreamTarget(*dict);
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
        if (!Memoize(memo_len_)) return false;
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

bool PickleDocument::Run(std::string_view data, PickleError* err, std::string_view key, PickleItemSink* sink) {
  PickleScratch& sc = *scratch_;
  sc.used = 0;
  if (sc.arena.size() > kKeptPickleScratch) std::deque<PickleContainer>().swap(sc.arena);
  auto clear = [&] {
    ClearPickleScratch(&sc.stack);  // also after a parse that ran out of memory
    ClearPickleScratch(&sc.marks);
    ClearPickleScratch(&sc.memo);
    ClearPickleScratch(&sc.memo_set);
    ClearPickleScratch(&sc.memo_serial);
    ClearPickleScratch(&sc.free);
  };
  clear();
  root_ = PickleValue{};
  protocol_ = 0;
  streamed_ = 0;
  MemoKeys fetched;
  Machine m(data, &sc);
  if (sink && FetchedMemoKeys(data, &fetched)) m.Stream(key, sink, &fetched);
  bool ok = m.Run(&root_, &protocol_, err);
  streamed_ = m.streamed();
  // The values are reached from root_ now (containers live in the arena):
  // the stack and the memo are done with.
  clear();
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

bool PickleDocument::ParseViewStreaming(std::string_view data, std::string_view key, PickleItemSink* sink,
                                        PickleError* err) {
  data_.reset();
  return Run(data, err, key, sink);
}

}  // namespace hangdx::ingest
