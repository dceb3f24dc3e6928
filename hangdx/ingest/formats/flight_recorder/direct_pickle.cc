#include "hangdx/ingest/formats/flight_recorder/direct_pickle.h"

#include <bit>
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
  cur_ = c;
  const bool ok = f();
  c = cur_;
  return ok;
}

void DirectDecoder::Reset() {
  slot_field_.clear();
  for (int k = 0; k < 2; ++k) {
    e_.sizes[k].dims.Release();
    e_.sizes[k].lens.Release();
    e_.dtypes[k].Release();
  }
  e_.frames.Release();
  e_.loose.Release();
}

// A value read back from memo slot k: strings inline, the rest out of line.
HANGDX_HOT bool DirectDecoder::FromMemo(Cur& c, uint64_t k, Val* v) {
  if (k >= c.memo_n) return false;
  const FlatValue& m = c.memo[k];
  if (m.kind() != K::kStr) return OtherFromMemo(m, k, v);
  v->kind = Val::kStr;
  v->s = std::string_view(m.u_.p, m.n_);
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
      return OutOfLine(c, [&] { return NewText(v); });
    default:
      return false;
  }
}

bool DirectDecoder::OtherFromMemo(const FlatValue& m, uint64_t k, Val* v) {
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
bool DirectDecoder::NewText(Val* v) {
  Cur& c = cur_;
  const size_t w = *c.p == 'X' ? 4 : 1;
  const size_t left = static_cast<size_t>(c.end - c.p) - 1;
  if (left < w) return false;
  const uint64_t n = LE(c.p + 1, w);
  if (left - w < n) return false;
  v->kind = Val::kStr;
  v->s = std::string_view(c.p + 1 + w, n);
  v->slot = DirectEntry::kNoSlot;
  c.p += 1 + w + n;
  if (c.p < c.end && IsMemoOp(*c.p)) {
    FlatValue s;
    s.kind_ = static_cast<uint8_t>(K::kStr);
    s.n_ = static_cast<uint32_t>(n);
    s.u_.p = v->s.data();
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

// input_sizes / output_sizes: None, or a list of lists of integers.
HANGDX_HOT bool DirectDecoder::ShapeList(Cur& c, DirectEntry::Shapes* out) {
  const char* p = c.p;
  const char* const end = c.end;
  if (p < end && *p == 'N') {
    c.p = p + 1;
    return true;
  }
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
    uint32_t n = 0;
    for (;;) {
      if (p >= end) return false;
      if (*p == 'e') {
        ++p;
        break;
      }
      int64_t d;
      if (!Int(p, end, &d)) return false;
      out->dims.push_back(d);
      ++n;
    }
    out->lens.push_back(n);
  }
  c.p = p;
  return NotMemoised(p, end);
}

// input_dtypes / output_dtypes: None, a bare string, or a list of strings.
HANGDX_HOT bool DirectDecoder::DtypeList(Cur& c, int which) {
  DirectBuf<std::string_view>& out = e_.dtypes[which];
  if (c.p >= c.end) return false;
  if (*c.p == 'N') {
    ++c.p;
    return true;
  }
  Val v;
  if (*c.p != ']') {  // PyTorch's own tests pass a bare dtype string
    if (!Simple(c, &v) || v.kind != Val::kStr) return false;
    out.push_back(v.s);
    e_.bare_dtypes[which] = true;
    return true;
  }
  if (!Opens(c.p, c.end, ']')) return false;
  c.p += 2;
  for (;;) {
    if (c.p >= c.end) return false;
    if (*c.p == 'e') {
      ++c.p;
      break;
    }
    if (!Simple(c, &v) || v.kind != Val::kStr) return false;
    out.push_back(v.s);
  }
  return NotMemoised(c.p, c.end);
}

// frames: a list whose dicts are the frames (mostly memoised ones read
// back), its other items skipped as ReadEntry skips them; or no list (no
// frames).
HANGDX_HOT bool DirectDecoder::FrameList(Cur& c) {
  if (c.p >= c.end) return false;
  if (*c.p != ']') {
    Val v;
    return Simple(c, &v) && v.kind != Val::kRef;  // no frames; a memoised list: the generic way
  }
  if (!Opens(c.p, c.end, ']')) return false;
  c.p += 2;
  e_.given |= DirectEntry::Bit(fr::kFrames);
  for (;;) {
    if (c.p >= c.end) return false;
    if (*c.p == 'e') {
      ++c.p;
      break;
    }
    if (e_.frame_items == std::numeric_limits<uint32_t>::max() / 2) return false;
    ++e_.frame_items;
    const size_t k = c.end - c.p >= 2 ? U(c.p[1]) : c.memo_n;
    if (*c.p == 'h' && k < c.memo_n && c.memo[k].is_dict()) {  // a frame read back: most items
      e_.frames.push_back(static_cast<uint32_t>(k));
      e_.max_cost += c.memo[k].size();
      c.p += 2;
    } else if (!OutOfLine(c, [&] { return FrameItem(); })) {
      return false;
    }
  }
  return NotMemoised(c.p, c.end);
}

// Another item of a frames list: a frame dict written out, or a value read
// back (a dict is a frame) or a scalar (skipped).
bool DirectDecoder::FrameItem() {
  Cur& c = cur_;
  if (*c.p == '}') return FrameDict();
  Val v;
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
        f.n_ = static_cast<uint32_t>(v.s.size());
        f.u_.p = v.s.data();
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
    Val k, v;
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

// The value of `field` (-1: a key hangdx does not read), as ReadEntry
// reads it; false for anything it would warn of or read otherwise.
HANGDX_HOT bool DirectDecoder::Value(Cur& c, int field) {
  DirectEntry& e = e_;
  switch (field) {
    case fr::kInputSizes:
    case fr::kOutputSizes:
      return ShapeList(c, &e.sizes[field == fr::kOutputSizes]);
    case fr::kInputDtypes:
    case fr::kOutputDtypes:
      return DtypeList(c, field == fr::kOutputDtypes);
    case fr::kFrames:
      return FrameList(c);
    case fr::kProcessGroup: {  // (name, desc): TUPLE2 of two strings
      Val a, b;
      if (!Simple(c, &a) || a.kind != Val::kStr || !Simple(c, &b) || b.kind != Val::kStr) return false;
      if (c.p >= c.end || U(*c.p) != 0x86) return false;
      ++c.p;
      if (!NotMemoised(c.p, c.end)) return false;
      e.pg_name = {a.s, a.slot};
      e.pg_desc = {b.s, b.slot};
      e.given |= DirectEntry::Bit(field);
      return true;
    }
    default:
      break;
  }
  Val v;
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
      if (field == fr::kState && fr::ParseState(v.s) == model::OpState::kUnknown) return false;
      (field == fr::kProfilingName ? e.profiling_name
       : field == fr::kThreadName  ? e.thread_name
       : field == fr::kThreadId    ? e.thread_id
                                   : e.state) = {v.s, v.slot};
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
  if (slot_field_.size() > memo0_) slot_field_.resize(memo0_);  // keys of slots now gone
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
  for (int k = 0; k < 2; ++k) {
    e.sizes[k].dims.clear();
    e.sizes[k].lens.clear();
    e.dtypes[k].clear();
    e.bare_dtypes[k] = false;
  }
  const int8_t* fields = slot_field_.data();
  size_t known = slot_field_.size();
  uint64_t pairs = 0;
  uint32_t seen = 0;
  for (;;) {
    if (c.p >= c.end) return false;
    int field;
    if (*c.p == 'u') {
      ++c.p;
      break;
    }
    if (*c.p == 'h' && c.end - c.p >= 2 && U(c.p[1]) < known && fields[U(c.p[1])] != kUnset) {
      field = fields[U(c.p[1])];  // a key read back, its field known: most keys
      c.p += 2;
    } else {
      if (!OutOfLine(c, [&] { return Key(&field); })) return false;
      fields = slot_field_.data();
      known = slot_field_.size();
    }
    ++pairs;
    if (field >= 0) {
      if (seen & DirectEntry::Bit(field)) return false;  // a repeated key: the converter takes the last
      seen |= DirectEntry::Bit(field);
    }
    if (!Value(c, field)) return false;
  }
  if (pairs > std::numeric_limits<uint32_t>::max() / 2) return false;
  e.pairs = static_cast<uint32_t>(pairs);
  e.seen = seen;
  e.max_cost += e.pairs + e.frame_items;
  for (int k = 0; k < 2; ++k)
    e.max_cost += e.sizes[k].lens.size() + e.sizes[k].dims.size() + (e.bare_dtypes[k] ? 0 : e.dtypes[k].size());
  in = c;
  // Without a profiling_name the converter skips it with a warning. The
  // entry is complete when the next opcode starts another one or closes
  // the list (not memoised, not filled again: FlatPickle's StreamStep).
  return (e.given & DirectEntry::Bit(fr::kProfilingName)) && c.p < c.end && (*c.p == '}' || *c.p == 'e');
}

// A key other than a known one read back: a new string (its field looked
// up by content, and noted for its memo slot), or one read back for the
// first time. False for anything but a string.
bool DirectDecoder::Key(int* field) {
  Cur& c = cur_;
  Val v;
  if (!Simple(c, &v) || v.kind != Val::kStr) return false;  // only a string key names a field
  *field = fr::FieldOf(v.s);
  if (v.slot != DirectEntry::kNoSlot) {  // its slot names the field from now on
    if (slot_field_.size() <= v.slot) slot_field_.resize(v.slot + 1, kUnset);
    slot_field_[v.slot] = static_cast<int8_t>(*field);
  }
  return true;
}

}  // namespace hangdx::ingest
