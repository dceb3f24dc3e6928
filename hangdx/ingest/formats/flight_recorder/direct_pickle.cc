#include "hangdx/ingest/formats/flight_recorder/direct_pickle.h"

#include <bit>
#include <algorithm>
#include <cstring>
#include <limits>

// The hot helpers are forced inline into the loop over an entry's pairs:
// as calls, their prologues and the cursor kept in memory cost more than
// the decoding (about 50 instructions per key).
#define HANGDX_HOT [[gnu::always_inline]] inline

namespace hangdx::ingest {
namespace {

using K = PickleValue::Kind;
constexpr int8_t kUnset = -2;  // slot_field_: not looked up yet
constexpr bool kLittleEndian = std::endian::native == std::endian::little;


HANGDX_HOT uint64_t LE(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
  return v;
}

HANGDX_HOT unsigned char U(char c) { return static_cast<unsigned char>(c); }

// BINPUT, LONG_BINPUT, MEMOIZE: the value before is memoised.
HANGDX_HOT bool IsMemoOp(char c) { return c == 'q' || c == 'r' || U(c) == 0x94; }

// Whether [p, end) starts with `a` `(` (an empty container and its MARK).
HANGDX_HOT bool Opens(const char* p, const char* end, char a) { return end - p >= 2 && p[0] == a && p[1] == '('; }

// A container just closed is complete unless a memo opcode follows (a
// memoised list or tuple is not torch's: read the generic way).
HANGDX_HOT bool NotMemoised(const char* p, const char* end) { return p >= end || !IsMemoOp(*p); }

// An integer opcode at p (BININT1, BININT2, BININT, LONG1 of up to 8 bytes),
// as FlatPickle::Number reads it; false for anything else or a truncation.
HANGDX_HOT bool Int(const char*& p, const char* end, int64_t* i) {
  const size_t left = static_cast<size_t>(end - p);
  switch (U(*p)) {
    case 'K':
      if (left < 2) return false;
      *i = U(p[1]);
      p += 2;
      return true;
    case 'M':
      if (left < 3) return false;
      *i = static_cast<int64_t>(LE(p + 1, 2));
      p += 3;
      return true;
    case 'J':
      if (left < 5) return false;
      *i = static_cast<int32_t>(static_cast<uint32_t>(LE(p + 1, 4)));
      p += 5;
      return true;
    case 0x8a: {
      if (left < 2) return false;
      const size_t n = U(p[1]);
      if (n > 8 || left - 2 < n) return false;  // a big integer: the converter warns of it
      uint64_t u;
      if (n == 8 && kLittleEndian)  // torch's timestamps: one load
        std::memcpy(&u, p + 2, 8);
      else
        u = LE(p + 2, n);
      if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);
      *i = static_cast<int64_t>(u);
      p += 2 + n;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

// Runs f, an out-of-line step, on cur_: the caller's cursor never has its
// address taken, so it stays in registers through the hot loop.
template <class F>
HANGDX_HOT bool DirectDecoder::OutOfLine(Cur& c, F f) {
  // The position alone goes and comes back (cur_.end is set by Decode, the
  // memo read where it lives): copying the whole cursor had the compiler
  // keep it packed in vector registers in the hot loop.
  cur_.p = c.p;
  cur_.memo = fp_->memo_.data();
  cur_.memo_n = fp_->memo_.size();
  const bool ok = f();
  c.p = cur_.p;
  c.memo = fp_->memo_.data();
  c.memo_n = fp_->memo_.size();
  return ok;
}

void DirectDecoder::Reset() {
  // 256 slots at least: a key read back by BINGET (one byte) needs no
  // bounds check.
  slot_field_.assign(256, kUnset);
  e_.frames.Release();
  e_.loose.Release();
}

// A value read back from memo slot k: strings inline, the rest out of line.
HANGDX_HOT bool DirectDecoder::FromMemo(Cur& c, uint64_t k, Val* v) {
  if (k >= c.memo_n) return false;
  const FlatValue& m = c.memo[k];
  if (m.kind() != K::kStr) {
    if (!OtherFromMemo(m, k)) return false;
    *v = val_;
    return true;
  }
  v->kind = Val::kStr;
  v->sp = m.u_.p;
  v->sn = m.n_;
  v->slot = static_cast<uint32_t>(k);
  return true;
}

// One value that builds no container: a scalar, a string (memoised into
// the memo as FlatPickle would), or a value read back from the memo.
HANGDX_HOT bool DirectDecoder::Simple(Cur& c, Val* v) {
  if (c.p >= c.end) return false;
  const unsigned char op = U(*c.p);
  switch (op) {
    case 'h':
      if (c.end - c.p < 2) return false;
      c.p += 2;
      return FromMemo(c, U(c.p[-1]), v);
    case 'j':
      if (c.end - c.p < 5) return false;
      c.p += 5;
      return FromMemo(c, LE(c.p - 4, 4), v);
    case 'K':
    case 'M':
    case 'J':
    case 0x8a:
      v->kind = Val::kInt;
      return Int(c.p, c.end, &v->i);
    case 'N':
      v->kind = Val::kNone;
      ++c.p;
      return true;
    case 0x88:
    case 0x89:
      v->kind = Val::kBool;
      v->i = op == 0x88;
      ++c.p;
      return true;
    case 'G': {  // BINFLOAT: big-endian
      if (c.end - c.p < 9) return false;
      uint64_t u = 0;
      for (int k = 1; k <= 8; ++k) u = (u << 8) | U(c.p[k]);
      c.p += 9;
      v->kind = Val::kFloat;
      std::memcpy(&v->f, &u, 8);
      return true;
    }
    case 'X':
    case 0x8c:
      if (!OutOfLine(c, [&] { return NewText(); })) return false;
      *v = val_;
      return true;
    default:
      return false;
  }
}

bool DirectDecoder::OtherFromMemo(const FlatValue& m, uint64_t k) {
  Val* const v = &val_;
  v->slot = static_cast<uint32_t>(k);
  switch (m.kind()) {
    case K::kNone:
      v->kind = Val::kNone;
      return true;
    case K::kBool:
      v->kind = Val::kBool;
      v->i = m.b();
      return true;
    case K::kInt:
      v->kind = Val::kInt;
      v->i = m.i();
      return true;
    case K::kFloat:
      v->kind = Val::kFloat;
      v->f = m.f();
      return true;
    default:
      if (!m.is_container()) return false;  // a big integer or bytes: read the generic way
      v->kind = Val::kRef;
      return true;
  }
}

// BINUNICODE or SHORT_BINUNICODE at cur_.p, memoised when a memo opcode follows.
bool DirectDecoder::NewText() {
  Cur& c = cur_;
  Val* const v = &val_;
  const size_t w = *c.p == 'X' ? 4 : 1;
  const size_t left = static_cast<size_t>(c.end - c.p) - 1;
  if (left < w) return false;
  const uint64_t n = LE(c.p + 1, w);
  if (left - w < n) return false;
  v->kind = Val::kStr;
  v->sp = c.p + 1 + w;
  v->sn = n;
  v->slot = DirectEntry::kNoSlot;
  c.p += 1 + w + n;
  if (c.p < c.end && IsMemoOp(*c.p)) {
    FlatValue s;
    s.kind_ = static_cast<uint8_t>(K::kStr);
    s.n_ = static_cast<uint32_t>(n);
    s.u_.p = v->sp;
    v->slot = static_cast<uint32_t>(c.memo_n);
    return Memo(s);
  }
  return true;
}

// The memo opcode at cur_.p stores `v` in the next slot; any other slot
// (one stored twice, a gap) is declined, as torch numbers them in order.
bool DirectDecoder::Memo(const FlatValue& v) {
  Cur& c = cur_;
  std::vector<FlatValue>& memo = fp_->memo_;
  const char op = *c.p;
  const size_t w = op == 'q' ? 1 : op == 'r' ? 4 : 0;
  if (static_cast<size_t>(c.end - c.p) <= w) return false;
  const uint64_t key = w ? LE(c.p + 1, w) : memo.size();
  if (key != memo.size() || memo.size() >= DirectEntry::kNoSlot) return false;
  c.p += 1 + w;
  memo.push_back(v);
  c.memo = memo.data();
  c.memo_n = memo.size();
  return true;
}

// input_sizes / output_sizes: None, or a list of lists of integers; its
// bytes and counts noted (DirectEntry::Shapes reads them on demand).
HANGDX_HOT bool DirectDecoder::ShapeList(Cur& c, int which) {
  const char* p = c.p;
  const char* const end = c.end;
  const char* const start = p;
  uint32_t shapes = 0, dims = 0;
  if (p < end && *p == 'N') {
    ++p;
  } else {
    if (!Opens(p, end, ']')) return false;
    p += 2;
    for (;;) {
      if (p >= end) return false;
      if (*p == 'e') {
        ++p;
        break;
      }
      if (!Opens(p, end, ']')) return false;
      p += 2;
      ++shapes;
      for (;;) {
        if (p >= end) return false;
        if (*p == 'e') {
          ++p;
          break;
        }
        int64_t d;
        if (!Int(p, end, &d)) return false;
        ++dims;
      }
    }
    if (!NotMemoised(p, end)) return false;  // a memoised list: the generic way
  }
  e_.sizes[which] = std::string_view(start, static_cast<size_t>(p - start));
  e_.shape_count[which] = shapes;
  e_.dim_count[which] = dims;
  c.p = p;
  return true;
}

// input_dtypes / output_dtypes: None, a bare string, or a list of strings.
HANGDX_HOT bool DirectDecoder::DtypeList(Cur& c, int which) {
  if (c.p >= c.end) return false;
  const char* const start = c.p;
  uint32_t n = 0;
  Val v{};
  if (*c.p == 'N') {
    ++c.p;
  } else if (*c.p != ']') {  // PyTorch's own tests pass a bare dtype string
    if (!Simple(c, &v) || v.kind != Val::kStr) return false;
    n = 1;
    e_.bare_dtypes[which] = true;
  } else {
    if (!Opens(c.p, c.end, ']')) return false;
    c.p += 2;
    for (;;) {
      if (c.p >= c.end) return false;
      if (*c.p == 'e') {
        ++c.p;
        break;
      }
      if (!Simple(c, &v) || v.kind != Val::kStr) return false;
      ++n;
    }
    if (!NotMemoised(c.p, c.end)) return false;
  }
  e_.dtypes[which] = std::string_view(start, static_cast<size_t>(c.p - start));
  e_.dtype_count[which] = n;
  return true;
}

// frames: a list whose dicts are the frames (mostly memoised ones read
// back), its other items skipped as ReadEntry skips them; or no list (no
// frames). While every item is read back by BINGET the list is plain (its
// bytes say it all); from the first other one, its dicts are listed.
HANGDX_HOT bool DirectDecoder::FrameList(Cur& c) {
  if (c.p >= c.end) return false;
  if (*c.p != ']') {
    Val v{};
    return Simple(c, &v) && v.kind != Val::kRef;  // no frames; a memoised list: the generic way
  }
  if (!Opens(c.p, c.end, ']')) return false;
  const char* const start = c.p;
  c.p += 2;
  e_.given |= DirectEntry::Bit(fr::kFrames);
  bool plain = true;
  uint32_t items = 0;
  uint64_t cost = 0;
  for (;;) {
    if (c.p >= c.end) return false;
    if (*c.p == 'e') {
      ++c.p;
      break;
    }
    if (items == std::numeric_limits<uint32_t>::max() / 2) return false;
    ++items;
    const size_t k = c.end - c.p >= 2 ? U(c.p[1]) : c.memo_n;
    if (*c.p == 'h' && k < c.memo_n) {  // read back: most items, a frame met before
      if (c.memo[k].is_dict()) {
        cost += c.memo[k].size();
        if (!plain) e_.frames.push_back(static_cast<uint32_t>(k));
      }
      c.p += 2;
      continue;
    }
    if (plain) {  // list the dicts so far (all read back), then this one's way
      plain = false;
      e_.memo = c.memo;
      e_.frames_bytes = std::string_view(start, static_cast<size_t>(c.p - start));
      e_.FrameDicts(&e_.frames);
    }
    if (!OutOfLine(c, [&] { return FrameItem(); })) return false;
  }
  e_.frames_bytes = std::string_view(start, static_cast<size_t>(c.p - start));
  e_.frames_plain = plain;
  e_.frame_items = items;
  e_.max_cost += cost;
  return NotMemoised(c.p, c.end);
}

// Another item of a frames list: a frame dict written out, or a value read
// back (a dict is a frame) or a scalar (skipped).
bool DirectDecoder::FrameItem() {
  Cur& c = cur_;
  if (*c.p == '}') return FrameDict();
  Val v{};
  if (!Simple(c, &v)) return false;
  if (v.kind == Val::kRef && c.memo[v.slot].is_dict()) {
    e_.frames.push_back(v.slot);
    e_.max_cost += c.memo[v.slot].size();
  }
  return true;
}

// A frame dict written out (its first use): string keys, simple values.
// Built as FlatPickle builds it, in its kept store when memoised (then
// read back by later entries), else in the entry's items.
bool DirectDecoder::FrameDict() {
  Cur& c = cur_;
  if (!Opens(c.p, c.end, '}')) return false;
  c.p += 2;
  scratch_.clear();
  auto flat = [](const Val& v) {
    FlatValue f;
    switch (v.kind) {
      case Val::kStr:
        f.kind_ = static_cast<uint8_t>(K::kStr);
        f.n_ = static_cast<uint32_t>(v.sn);
        f.u_.p = v.sp;
        break;
      case Val::kFloat:
        f.kind_ = static_cast<uint8_t>(K::kFloat);
        f.u_.f = v.f;
        break;
      case Val::kInt:
      case Val::kBool:
        f.kind_ = static_cast<uint8_t>(v.kind == Val::kInt ? K::kInt : K::kBool);
        f.u_.i = v.i;
        break;
      default:  // kNone (kRef is declined before)
        break;
    }
    return f;
  };
  for (;;) {
    if (c.p >= c.end) return false;
    if (*c.p == 'u') {
      ++c.p;
      break;
    }
    Val k{}, v{};
    if (!Simple(c, &k) || k.kind != Val::kStr || !Simple(c, &v) || v.kind == Val::kRef) return false;
    scratch_.push_back(flat(k));
    scratch_.push_back(flat(v));
  }
  FlatPickle& fp = *fp_;
  const bool memoised = c.p < c.end && IsMemoOp(*c.p);
  std::vector<FlatValue>& store = memoised ? fp.kept_ : fp.items_;
  if (fp.next_id_ == std::numeric_limits<uint32_t>::max() ||
      store.size() + scratch_.size() > std::numeric_limits<uint32_t>::max())
    return false;
  FlatValue dict;
  dict.kind_ = static_cast<uint8_t>(K::kDict);
  dict.n_ = static_cast<uint32_t>(scratch_.size());
  dict.u_.c.first = static_cast<uint32_t>(store.size());
  dict.u_.c.id = fp.next_id_++;
  store.insert(store.end(), scratch_.begin(), scratch_.end());
  e_.max_cost += dict.size();
  if (!memoised) {
    e_.frames.push_back(DirectEntry::kLoose | static_cast<uint32_t>(e_.loose.size()));
    e_.loose.push_back(dict);
    return true;
  }
  dict.flags_ = FlatValue::kKept | FlatValue::kSealed;
  const uint32_t slot = static_cast<uint32_t>(c.memo_n);
  if (!Memo(dict)) return false;
  e_.frames.push_back(slot);
  return true;
}

// The value of `field` (-1: a key hangdx does not read): the values
// torch writes inline here (an integer field's BININT* / LONG1 or None, a
// bool, a string read back, the (name, desc) pair read back), the lists
// by their readers, anything else by Value.
HANGDX_HOT bool DirectDecoder::Common(Cur& c, int field) {
  DirectEntry& e = e_;
  if (c.p >= c.end) return false;
  const char op = *c.p;
  // A string read back at c.p + at: its Text, or false.
  auto text = [&](size_t at, DirectEntry::Text* out) {
    if (c.end - c.p < static_cast<std::ptrdiff_t>(at + 2) || c.p[at] != 'h') return false;
    const size_t k = U(c.p[at + 1]);
    if (k >= c.memo_n || c.memo[k].kind() != K::kStr) return false;
    *out = {std::string_view(c.memo[k].u_.p, c.memo[k].n_), static_cast<uint32_t>(k)};
    return true;
  };
  DirectEntry::Text* out = nullptr;
  switch (field) {
    case fr::kRecordId:
    case fr::kPgId:
    case fr::kCollectiveSeq:
    case fr::kP2pSeq:
    case fr::kOpId:
    case fr::kTimeCreated:
    case fr::kTimeStarted:
    case fr::kTimeCompleted:
    case fr::kTimeout:
      if (op == 'N') {  // None: the field stays unset
        ++c.p;
        return true;
      }
      if (!Int(c.p, c.end, &e.ints[field])) return Value(c, field);
      e.given |= DirectEntry::Bit(field);
      return true;
    case fr::kRetired:
    case fr::kIsP2p:
      if (U(op) != 0x88 && U(op) != 0x89) return Value(c, field);
      e.ints[field] = U(op) == 0x88;
      e.given |= DirectEntry::Bit(field);
      ++c.p;
      return true;
    case fr::kProcessGroup:  // h name h desc TUPLE2, not memoised
      if (c.end - c.p < 5 || U(c.p[4]) != 0x86 || !text(0, &e.pg_name) || !text(2, &e.pg_desc) ||
          !NotMemoised(c.p + 5, c.end))
        return Value(c, field);
      c.p += 5;
      e.given |= DirectEntry::Bit(field);
      return true;
    case fr::kInputSizes:
    case fr::kOutputSizes:
      return ShapeList(c, field == fr::kOutputSizes);
    case fr::kInputDtypes:
    case fr::kOutputDtypes:
      return DtypeList(c, field == fr::kOutputDtypes);
    case fr::kFrames:
      return FrameList(c);
    case fr::kProfilingName:
    case fr::kThreadName:
    case fr::kThreadId:
    case fr::kState:
      out = field == fr::kProfilingName ? &e.profiling_name
            : field == fr::kThreadName  ? &e.thread_name
            : field == fr::kThreadId    ? &e.thread_id
                                        : &e.state;
      break;
    default:
      return Value(c, field);
  }
  if (!text(0, out)) return Value(c, field);
  if (field == fr::kState && fr::ParseState(out->s) == model::OpState::kUnknown) return false;  // warned of
  e.given |= DirectEntry::Bit(field);
  c.p += 2;
  return true;
}

// Common's general way: the value of `field` as ReadEntry reads it,
// false for anything it would warn of or read otherwise.
HANGDX_HOT bool DirectDecoder::Value(Cur& c, int field) {
  DirectEntry& e = e_;
  switch (field) {  // the lists are Common's alone
    case fr::kProcessGroup: {  // (name, desc): TUPLE2 of two strings
      Val a{}, b{};
      if (!Simple(c, &a) || a.kind != Val::kStr || !Simple(c, &b) || b.kind != Val::kStr) return false;
      if (c.p >= c.end || U(*c.p) != 0x86) return false;
      ++c.p;
      if (!NotMemoised(c.p, c.end)) return false;
      e.pg_name = {a.s(), a.slot};
      e.pg_desc = {b.s(), b.slot};
      e.given |= DirectEntry::Bit(field);
      return true;
    }
    default:
      break;
  }
  Val v{};
  if (!Simple(c, &v)) return false;
  const uint32_t bit = field >= 0 ? DirectEntry::Bit(field) : 0;
  switch (field) {
    case -1:  // not read: any simple value
      return true;
    case fr::kProfilingName:
    case fr::kThreadName:
    case fr::kThreadId:
    case fr::kState:  // a string or ignored; an unknown state is warned of
      if (v.kind != Val::kStr) return field != fr::kProfilingName;
      if (field == fr::kState && fr::ParseState(v.s()) == model::OpState::kUnknown) return false;
      (field == fr::kProfilingName ? e.profiling_name
       : field == fr::kThreadName  ? e.thread_name
       : field == fr::kThreadId    ? e.thread_id
                                   : e.state) = {v.s(), v.slot};
      e.given |= bit;
      return true;
    case fr::kRetired:
    case fr::kIsP2p:  // a bool or an integer, else ignored
      if (v.kind == Val::kBool || v.kind == Val::kInt) {
        e.ints[field] = v.i;
        e.given |= bit;
      }
      return true;
    case fr::kDuration:  // a number, else ignored
      if (v.kind == Val::kFloat || v.kind == Val::kInt) {
        e.duration_ms = v.kind == Val::kFloat ? v.f : static_cast<double>(v.i);
        e.given |= bit;
      }
      return true;
    default:  // the integer fields: None or a number (or a bool); a string or float the converter reads its way
      if (v.kind == Val::kNone) return true;
      if (v.kind != Val::kInt && v.kind != Val::kBool) return false;
      e.ints[field] = v.i;
      e.given |= bit;
      return true;
  }
}

size_t DirectDecoder::Decode(FlatPickle* fp, std::string_view d, size_t at) {
  fp_ = fp;
  memo0_ = fp->memo_.size();
  kept0_ = fp->kept_.size();
  items0_ = fp->items_.size();
  id0_ = fp->next_id_;
  Cur c{d.data() + at, d.data() + d.size(), fp->memo_.data(), fp->memo_.size()};
  cur_.end = c.end;
  if (!Entry(c)) {
    Restore();
    return 0;
  }
  e_.memo = fp->memo_.data();
  return static_cast<size_t>(c.p - d.data());
}

void DirectDecoder::Undo(FlatPickle* fp) {
  fp_ = fp;
  Restore();
}

void DirectDecoder::Restore() {
  fp_->memo_.resize(memo0_);
  fp_->kept_.resize(kept0_);
  fp_->items_.resize(items0_);
  fp_->next_id_ = id0_;
  // Keys of slots now gone.
  if (slot_field_.size() > memo0_) slot_field_.resize(std::max<size_t>(memo0_, 256));
  for (size_t k = memo0_; k < 256; ++k) slot_field_[k] = kUnset;
}

// `}` `(` key value ... `u`: the pairs, each key naming its field.
bool DirectDecoder::Entry(Cur& in) {
  Cur c = in;  // a local: in registers through the loop (OutOfLine)
  if (!Opens(c.p, c.end, '}')) return false;
  c.p += 2;
  DirectEntry& e = e_;
  e.doc = fp_;
  e.given = e.frame_items = 0;
  e.max_cost = 0;
  e.frames.clear();
  e.loose.clear();
  e.frames_bytes = {};
  e.frames_plain = false;
  for (int k = 0; k < 2; ++k) {
    e.sizes[k] = e.dtypes[k] = {};
    e.shape_count[k] = e.dim_count[k] = e.dtype_count[k] = 0;
    e.bare_dtypes[k] = false;
  }
  const int8_t* fields = slot_field_.data();  // 256 at least (Reset)
  uint64_t pairs = 0;
  uint32_t seen = 0;
  for (;;) {
    if (c.p >= c.end) return false;
    int field;
    if (*c.p == 'u') {
      ++c.p;
      break;
    }
    if (*c.p == 'h' && c.end - c.p >= 2 && fields[U(c.p[1])] != kUnset) {
      field = fields[U(c.p[1])];  // a key read back, its field known: most keys
      c.p += 2;
    } else {
      if (!OutOfLine(c, [&] { return Key(); })) return false;
      field = key_field_;
      fields = slot_field_.data();
    }
    ++pairs;
    if (field >= 0) {
      if (seen & DirectEntry::Bit(field)) return false;  // a repeated key: the converter takes the last
      seen |= DirectEntry::Bit(field);
    }
    if (!Common(c, field)) return false;
  }
  if (pairs > std::numeric_limits<uint32_t>::max() / 2) return false;
  e.pairs = static_cast<uint32_t>(pairs);
  e.seen = seen;
  e.max_cost += e.pairs + e.frame_items;
  for (int k = 0; k < 2; ++k)
    e.max_cost += uint64_t{e.shape_count[k]} + e.dim_count[k] + (e.bare_dtypes[k] ? 0 : e.dtype_count[k]);
  in = c;
  // Without a profiling_name the converter skips it with a warning. The
  // entry is complete when the next opcode starts another one or closes
  // the list (not memoised, not filled again: FlatPickle's StreamStep).
  return (e.given & DirectEntry::Bit(fr::kProfilingName)) && c.p < c.end && (*c.p == '}' || *c.p == 'e');
}

// A key other than a known one read back: a new string (its field looked
// up by content, and noted for its memo slot), or one read back for the
// first time. False for anything but a string.
bool DirectDecoder::Key() {
  Cur& c = cur_;
  Val v{};
  if (!Simple(c, &v) || v.kind != Val::kStr) return false;  // only a string key names a field
  key_field_ = fr::FieldOf(v.s());
  if (v.slot != DirectEntry::kNoSlot) {  // its slot names the field from now on
    if (slot_field_.size() <= v.slot) slot_field_.resize(v.slot + 1, kUnset);
    slot_field_[v.slot] = static_cast<int8_t>(key_field_);
  }
  return true;
}

// The readers on demand of what Decode checked and noted: they read
// the same bytes again, valid by then.

void DirectEntry::Shapes(int k, model::Shapes* out) const {
  out->clear();
  const std::string_view b = sizes[k];
  if (b.empty() || b[0] == 'N') return;
  const char* p = b.data() + 2;  // past `](`
  const char* const end = b.data() + b.size();
  while (*p != 'e') {
    p += 2;  // `](`
    model::Shape& shape = out->emplace_back();
    while (*p != 'e') {
      int64_t d = 0;
      Int(p, end, &d);
      shape.push_back(d);
    }
    ++p;
  }
}

void DirectEntry::Dtypes(int k, model::Dtypes* out) const {
  out->clear();
  const std::string_view b = dtypes[k];
  if (b.empty() || b[0] == 'N') return;
  const char* p = b.data();
  auto text = [&] {  // one string opcode at p (and its memo opcode)
    const unsigned char op = U(*p);
    if (op == 'h' || op == 'j') {
      const size_t w = op == 'h' ? 1 : 4;
      out->emplace_back(memo[LE(p + 1, w)].s());
      p += 1 + w;
      return;
    }
    const size_t w = op == 'X' ? 4 : 1, n = LE(p + 1, w);
    out->emplace_back(p + 1 + w, n);
    p += 1 + w + n;
    if (p < b.data() + b.size() && IsMemoOp(*p)) p += *p == 'q' ? 2 : *p == 'r' ? 5 : 1;
  };
  if (b[0] != ']') return text();
  for (p += 2; *p != 'e';) text();
}

void DirectEntry::FrameDicts(DirectBuf<uint32_t>* out) const {
  const std::string_view b = frames_bytes;
  for (const char* p = b.data() + 2; p + 1 < b.data() + b.size() && *p == 'h'; p += 2)
    if (memo[U(p[1])].is_dict()) out->push_back(U(p[1]));
}

}  // namespace hangdx::ingest

#undef HANGDX_HOT
