#include "hangdx/ingest/formats/flight_recorder/flat_pickle.h"

#include <cstring>
#include <limits>

namespace hangdx::ingest {
namespace {

using K = PickleValue::Kind;
// Nesting deeper than this in a memoised container is declined: Keep
// recurses, and a dump's deepest memoised value is a frame dict.
constexpr int kMaxKeepDepth = 64;

inline uint64_t LE(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
  return v;
}

}  // namespace

bool FlatPickle::Read(std::string_view data, FlatEntrySink* sink) {
  ClearPickleScratch(&stack_);
  ClearPickleScratch(&marks_);
  ClearPickleScratch(&memo_);
  ClearPickleScratch(&items_);
  ClearPickleScratch(&kept_);
  root_ = FlatValue();
  next_id_ = 0;
  stream_ = Stream::kLooking;
  list_index_ = item_mark_ = item_begin_ = streamed_ = 0;
  direct_ = sink->TakesDirect();
  bool ok = Run(data, sink);
  ClearPickleScratch(&stack_);
  ClearPickleScratch(&marks_);
  ClearPickleScratch(&memo_);
  return ok;
}

const char FlatPickle::kSharedEmpty = 0;

void FlatPickle::Release() {
  root_ = FlatValue();
  ClearPickleScratch(&items_);
  ClearPickleScratch(&kept_);
}

// A new container of kind `k` with items [first, first + n) of items_;
// false when the creation numbers ran out (a pickle of 4 G containers).
inline bool FlatPickle::NewContainer(FlatValue::Kind k, uint32_t first, uint32_t n, FlatValue* out) {
  if (next_id_ == std::numeric_limits<uint32_t>::max()) return false;
  *out = FlatValue();
  out->kind_ = static_cast<uint8_t>(k);
  out->n_ = n;
  out->u_.c.first = first;
  out->u_.c.id = next_id_++;
  return true;
}

// A tuple of stack_[from, end), which leave the stack.
bool FlatPickle::Tuple(size_t from) {
  const size_t n = stack_.size() - from;
  if (items_.size() + n > std::numeric_limits<uint32_t>::max()) return false;
  FlatValue t;
  if (!NewContainer(K::kTuple, static_cast<uint32_t>(items_.size()), static_cast<uint32_t>(n), &t)) return false;
  items_.insert(items_.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
  stack_.resize(from);
  stack_.push_back(t);
  return true;
}

// APPENDS or SETITEMS: the items above the last MARK go into the container
// below it, which must be empty, never memoised and of the opcode's kind.
// The MARK of the streamed list takes APPENDS only (PickleDocument refuses
// anything else there), after its last item was handed over.
bool FlatPickle::Fill(unsigned char op) {
  if (marks_.empty()) return false;
  const size_t m = marks_.back();
  marks_.pop_back();
  if (stream_ == Stream::kActive && m == item_mark_) {
    if (op != 'e') return false;
    stream_ = Stream::kDone;
  }
  if (m == 0 || m <= Base()) return false;
  FlatValue& target = stack_[m - 1];
  const size_t n = stack_.size() - m;
  if (target.kind() != (op == 'e' ? K::kList : K::kDict) || (op == 'u' && n % 2)) return false;
  if (n == 0) return true;
  if (target.n_ != 0 || (target.flags_ & FlatValue::kSealed)) return false;  // filled twice, or memoised
  if (items_.size() + n > std::numeric_limits<uint32_t>::max()) return false;
  target.u_.c.first = static_cast<uint32_t>(items_.size());
  target.n_ = static_cast<uint32_t>(n);
  items_.insert(items_.end(), stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
  stack_.resize(m);
  return true;
}

// Moves the items of container *v, and of the containers they hold, to
// the kept store, where they live as long as the document (a memoised
// value may come back any time later). Each container moves once. An
// empty one held stays as it is: PickleDocument gives a container its own
// identity when it is memoised or filled, and those it holds, never
// filled, keep the one of every empty container (Identity).
bool FlatPickle::Keep(FlatValue* v, int depth) {
  if (!v->is_container() || (v->flags_ & FlatValue::kKept)) return true;
  if (v->n_ == 0 && depth > 0) return true;
  if (depth > kMaxKeepDepth || kept_.size() + v->n_ > std::numeric_limits<uint32_t>::max()) return false;
  const size_t first = kept_.size();
  kept_.insert(kept_.end(), items_.begin() + v->u_.c.first, items_.begin() + v->u_.c.first + v->n_);
  for (size_t k = first; k < first + v->n_; ++k) {
    FlatValue child = kept_[k];  // a copy: kept_ may grow meanwhile
    if (!Keep(&child, depth + 1)) return false;
    kept_[k] = child;
  }
  v->u_.c.first = static_cast<uint32_t>(first);
  v->flags_ |= FlatValue::kKept;
  return true;
}

// BINPUT and its kin: the stack's top goes into memo slot `key`, which
// must be an existing slot or the next one (torch numbers them in order;
// a gap is declined, so the memo stays as big as the stores).
bool FlatPickle::Memoize(uint64_t key) {
  if (stack_.empty() || key > memo_.size()) return false;
  FlatValue& top = stack_.back();
  if (top.is_container()) {
    if (!Keep(&top, 0)) return false;
    top.flags_ |= FlatValue::kSealed;
  }
  if (key == memo_.size())
    memo_.push_back(top);
  else
    direct_ = false;  // torch never stores a slot twice
  memo_[key] = top;
  return true;
}

// An EMPTY_LIST just pushed: the streamed list when it is the value of the
// first "entries" key of the top-level dict (PickleDocument's rule: the
// root dict at the bottom, its MARK open alone, the list at an even
// offset after it).
void FlatPickle::ListPushed() {
  const size_t i = stack_.size() - 1;
  if (marks_.size() != 1 || marks_[0] != 1 || !stack_[0].is_dict() || i < 2 || i % 2) return;
  auto entries = [](const FlatValue& v) { return v.kind() == K::kStr && v.s() == "entries"; };
  if (!entries(stack_[i - 1])) return;
  for (size_t j = 1; j + 1 < i; j += 2)
    if (entries(stack_[j])) {
      stream_ = Stream::kDone;  // an earlier "entries" is the one a reader gets
      return;
    }
  stream_ = Stream::kListed;
  list_index_ = i;
}

// Hands the item at the streamed list's MARK to the sink, once a later
// opcode shows it complete; the items it made are dropped when it stood
// alone (a second item beside it made its own after them).
void FlatPickle::HandOver(FlatEntrySink* sink) {
  sink->Entry(stack_[item_mark_]);
  ++streamed_;
  if (stack_.size() == item_mark_ + 1) {
    stack_.pop_back();
    items_.resize(item_begin_);
  } else {
    stack_.erase(stack_.begin() + static_cast<std::ptrdiff_t>(item_mark_));
  }
}

// BININT1, BININT2, BININT, LONG1, BINFLOAT at d[*pos] (their operand):
// pushes the number and moves *pos past it; false when cut short.
inline bool FlatPickle::Number(unsigned char op, std::string_view d, size_t* at) {
  const char* const data = d.data();
  size_t& pos = *at;
  auto need = [&](size_t n) { return d.size() - pos >= n; };
  auto push_int = [&](int64_t i) {
    FlatValue& v = stack_.emplace_back();
    v.kind_ = static_cast<uint8_t>(K::kInt);
    v.u_.i = i;
  };
  switch (op) {
    case 'K':
      if (!need(1)) return false;
      push_int(static_cast<unsigned char>(data[pos]));
      pos += 1;
      return true;
    case 'M':
      if (!need(2)) return false;
      push_int(static_cast<int64_t>(LE(data + pos, 2)));
      pos += 2;
      return true;
    case 'J':
      if (!need(4)) return false;
      push_int(static_cast<int32_t>(static_cast<uint32_t>(LE(data + pos, 4))));
      pos += 4;
      return true;
    case 0x8a: {  // LONG1: up to 8 bytes an int, longer a big int (a view)
      if (!need(1)) return false;
      const size_t n = static_cast<unsigned char>(data[pos++]);
      if (!need(n)) return false;
      if (n > 8) {
        FlatValue& v = stack_.emplace_back();
        v.kind_ = static_cast<uint8_t>(K::kBigInt);
        v.n_ = static_cast<uint32_t>(n);
        v.u_.p = data + pos;
        pos += n;
        return true;
      }
      uint64_t u = LE(data + pos, n);
      if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);
      push_int(static_cast<int64_t>(u));
      pos += n;
      return true;
    }
    default: {  // 'G', BINFLOAT: big-endian
      if (!need(8)) return false;
      uint64_t u = 0;
      for (int k = 0; k < 8; ++k) u = (u << 8) | static_cast<unsigned char>(data[pos + k]);
      pos += 8;
      FlatValue& v = stack_.emplace_back();
      v.kind_ = static_cast<uint8_t>(K::kFloat);
      std::memcpy(&v.u_.f, &u, 8);
      return true;
    }
  }
}

// Before each opcode while the list is met: as PickleDocument, streaming
// ends when the list left the stack; between two of its items, the one on
// the stack is complete unless a MARK opens to fill it or a PUT memoises it.
void FlatPickle::StreamStep(unsigned char op, FlatEntrySink* sink) {
  if (stream_ == Stream::kListed) {
    if (stack_.size() <= list_index_) stream_ = Stream::kDone;
    return;
  }
  if (marks_.size() != 2 || marks_[1] != item_mark_) return;
  while (stack_.size() > item_mark_ + 1) HandOver(sink);  // one made by a MARK ... TUPLE beside it
  if (stack_.size() == item_mark_)
    item_begin_ = items_.size();
  else if (op != '(' && op != 'q' && op != 'r' && op != 0x94)
    HandOver(sink);
}

bool FlatPickle::Run(std::string_view d, FlatEntrySink* sink) {
  const char* const data = d.data();
  const size_t size = d.size();
  size_t pos = 0;
  auto need = [&](size_t n) { return size - pos >= n; };
  auto push_str = [&](size_t n) {
    if (!need(n)) return false;
    FlatValue& v = stack_.emplace_back();
    v.kind_ = static_cast<uint8_t>(K::kStr);
    v.n_ = static_cast<uint32_t>(n);
    v.u_.p = data + pos;
    pos += n;
    return true;
  };
  auto push_empty = [&](K k) {
    FlatValue v;
    if (!NewContainer(k, 0, 0, &v)) return false;
    stack_.push_back(v);
    return true;
  };
  auto fetch = [&](uint64_t key) {
    if (key >= memo_.size()) return false;  // never stored (slots are stored in order)
    stack_.push_back(memo_[key]);
    return true;
  };
  while (pos < size) {
    const unsigned char op = static_cast<unsigned char>(data[pos++]);
    // Inside an entry (a third MARK open) there is nothing to check: most
    // opcodes skip the call.
    if (stream_ >= Stream::kListed && (stream_ == Stream::kListed || marks_.size() == 2)) StreamStep(op, sink);
    // An entry's EMPTY_DICT, no other item beside it: the sink may read
    // the whole entry from its bytes (direct_pickle.h).
    if (op == '}' && direct_ && stream_ == Stream::kActive && marks_.size() == 2 && stack_.size() == item_mark_) {
      if (const size_t end = sink->Direct(this, d, pos - 1)) {
        pos = end;
        ++streamed_;
        items_.resize(item_begin_);  // what its frame dicts not memoised held
        continue;
      }
    }
    switch (op) {
      case 0x80:  // PROTO
        if (!need(1) || static_cast<unsigned char>(data[pos]) > 5) return false;
        ++pos;
        break;
      case 0x95:  // FRAME: advisory
        if (!need(8)) return false;
        pos += 8;
        break;
      case '.':  // STOP
        if (stack_.size() != 1 || !marks_.empty()) return false;
        root_ = stack_.back();
        return true;
      case '(':
        marks_.push_back(stack_.size());
        if (stream_ == Stream::kListed && marks_.size() == 2 && stack_.size() == list_index_ + 1) {
          stream_ = Stream::kActive;
          item_mark_ = stack_.size();
          item_begin_ = items_.size();
        }
        break;
      case 'N':
        stack_.emplace_back();
        break;
      case 0x88:
      case 0x89: {
        FlatValue& v = stack_.emplace_back();
        v.kind_ = static_cast<uint8_t>(K::kBool);
        v.u_.i = op == 0x88;
        break;
      }
      case 'K':
      case 'M':
      case 'J':
      case 0x8a:
      case 'G':
        if (!Number(op, d, &pos)) return false;
        break;
      case 'X':  // BINUNICODE
        if (!need(4)) return false;
        pos += 4;
        if (!push_str(LE(data + pos - 4, 4))) return false;
        break;
      case 0x8c:  // SHORT_BINUNICODE
        if (!need(1)) return false;
        pos += 1;
        if (!push_str(static_cast<unsigned char>(data[pos - 1]))) return false;
        break;
      case ']':
        if (!push_empty(K::kList)) return false;
        if (stream_ == Stream::kLooking) ListPushed();
        break;
      case ')':
        if (!push_empty(K::kTuple)) return false;
        break;
      case '}':
        if (!push_empty(K::kDict)) return false;
        break;
      case 'e':
      case 'u':
        if (!Fill(op)) return false;
        break;
      case 't': {  // TUPLE from MARK
        if (marks_.empty()) return false;
        const size_t m = marks_.back();
        if (stream_ == Stream::kActive && m == item_mark_) return false;
        marks_.pop_back();
        if (!Tuple(m)) return false;
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84;
        if (stack_.size() < Base() + n || !Tuple(stack_.size() - n)) return false;
        break;
      }
      case 'q':
        if (!need(1) || !Memoize(static_cast<unsigned char>(data[pos]))) return false;
        pos += 1;
        break;
      case 'r':
        if (!need(4) || !Memoize(LE(data + pos, 4))) return false;
        pos += 4;
        break;
      case 0x94:  // MEMOIZE: the next key
        if (!Memoize(memo_.size())) return false;
        break;
      case 'h':
        if (!need(1) || !fetch(static_cast<unsigned char>(data[pos]))) return false;
        pos += 1;
        break;
      case 'j':
        if (!need(4) || !fetch(LE(data + pos, 4))) return false;
        pos += 4;
        break;
      default:
        return false;  // refused, unknown, or not in a dump: PickleDocument reads it
    }
  }
  return false;  // no STOP
}

}  // namespace hangdx::ingest
