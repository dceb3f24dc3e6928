// hangdx/ingest/formats/flight_recorder/direct_pickle.h
// The direct decoder of Flight Recorder entries: one entry dict of a
// pickle, as torch::jit::Pickler writes it (flat_pickle.h lists the
// opcodes), read straight from its opcodes into the fields the converter
// needs (DirectEntry), with no values built for it and no adapter between.
// A key read back from the memo (BINGET) names its field through a table
// by memo key, filled the first time each key string is met, and the value
// that follows is read as that field's value: an integer field takes a
// number, the sizes a list of lists of numbers, and so on.
//
// Why: reading each entry as generic values and then looking its keys up
// again was most of a pickle dump's reading (docs/performance.md, "Where
// the time and memory still go").
//
// It is a shortcut of FlatPickle, which calls it at each entry of the
// streamed list: it declines (Decode returns 0, and nothing of the
// FlatPickle changed) any entry that is not plain, that is every one that
// the converter would warn of or read through a rule of its own (a
// repeated key, a key that is not a string, an integer field holding a
// string or a float, an unknown state, a container where hangdx reads no
// container, a container memoised other than a frame dict, a truncation,
// ...), and FlatPickle reads that entry as before. What it accepts the
// converter turns into the record ReadEntry gives for the same entry
// (Converter::ReadDirect; FlightRecorder.DirectAndFlatPickleReadersAgree).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hangdx/ingest/formats/flight_recorder/entry_fields.h"
#include "hangdx/ingest/formats/flight_recorder/flat_pickle.h"

namespace hangdx::ingest {

// A vector appended to inline, that keeps its memory between entries
// (std::vector::push_back was a call per item in the decoder's loop).
template <class T>
class DirectBuf {
 public:
  void clear() { n_ = 0; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T* begin() const { return v_.data(); }
  const T* end() const { return v_.data() + n_; }
  const T* data() const { return v_.data(); }
  const T& operator[](size_t i) const { return v_[i]; }
  void push_back(const T& x) {
    if (n_ == v_.size()) Grow();
    v_[n_++] = x;
  }
  // Gives back the memory of a big entry (a crafted one) once read.
  void Release() {
    if (v_.size() > 4096) std::vector<T>().swap(v_);
    n_ = 0;
  }

 private:
  [[gnu::noinline]] void Grow() { v_.resize(v_.size() * 2 + 16); }
  std::vector<T> v_;
  size_t n_ = 0;
};

// One entry as the direct decoder read it: views into the input, valid
// until the next Decode. Which fields hold what is told by two masks of
// fr::Field bits.
struct DirectEntry {
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static constexpr uint32_t Bit(int field) { return uint32_t{1} << field; }
  // A string and its memo slot (kNoSlot: not memoised), by which the
  // converter keeps what it made of it.
  struct Text {
    std::string_view s;
    uint32_t slot;
  };
  // frames: a memoised dict's memo slot, or kLoose + its index in loose.
  static constexpr uint32_t kLoose = uint32_t{1} << 31;
  const FlatPickle* doc = nullptr;  // where the frame dicts' items are (FlatPickle::Items)
  const FlatValue* memo = nullptr;  // the memo (its strings and memoised frame dicts)
  uint32_t pairs = 0;               // the dict's items (PickleValue::size())
  uint32_t seen = 0;                // keys present
  // Values that count: a number or bool of an integer or boolean field, a
  // number of duration_ms, a string of a string field, the (name, desc)
  // tuple, a list of the frames.
  uint32_t given = 0;
  int64_t ints[fr::kFieldCount];  // integer and boolean fields (a bool as 0 / 1)
  double duration_ms = 0;
  Text profiling_name, state, thread_name, thread_id, pg_name, pg_desc;
  // The sizes and dtypes (input, output) as their bytes ("" when absent,
  // "N" for None), which Shapes and Dtypes read: the converter keeps what
  // it made of the same bytes (entries repeat a few), and reads the others.
  std::string_view sizes[2], dtypes[2];
  uint32_t shape_count[2] = {0, 0}, dim_count[2] = {0, 0}, dtype_count[2] = {0, 0};
  bool bare_dtypes[2] = {false, false};  // a dtype given as a string, not a list
  // The frames list's bytes; plain: its items are all read back by BINGET
  // (frames met before, or values skipped), so the same bytes give the same
  // stack. Else `frames` lists its dicts, in order.
  std::string_view frames_bytes;
  bool frames_plain = false;
  uint32_t frame_items = 0;      // items of the frames list, dicts or not
  DirectBuf<uint32_t> frames;    // when not plain: its dicts (kLoose: a dict not memoised)
  DirectBuf<FlatValue> loose;    // the dicts not memoised
  // The most of the converter's WorkBudget that reading it spends:
  // ReadEntry spends the entry's size, each shape list's size and
  // dimensions, each dtype list's size (a bare string nothing), the frames
  // list's size and each new frame dict's size (at most all of them).
  uint64_t max_cost = 0;

  // The shapes of sizes[k] (k: 0 input, 1 output).
  void Shapes(int k, model::Shapes* out) const;
  // The dtypes of dtypes[k].
  void Dtypes(int k, model::Dtypes* out) const;
  // The frame dicts of the frames list, in order (as `frames`).
  void FrameDicts(DirectBuf<uint32_t>* out) const;
};

// Decodes the entries of one pickle at a time (FlatPickle owns one).
class DirectDecoder {
 public:
  // Decodes the entry dict whose EMPTY_DICT is at d[at], the strings and
  // frame dicts it memoises going to `fp`'s memo as FlatPickle would put
  // them. Returns the offset past its SETITEMS, or 0 when it declines it
  // (see above), with `fp` as it was. The next opcode must start another
  // entry or close the list (then the entry is complete: FlatPickle's
  // StreamStep).
  size_t Decode(FlatPickle* fp, std::string_view d, size_t at);
  // The entry of the last Decode that did not decline.
  const DirectEntry& entry() const { return e_; }
  // Takes back what the last Decode added to `fp` (the converter declined
  // the entry, FlatPickle reads it again its own way).
  void Undo(FlatPickle* fp);
  // Forgets the memo keys' fields, and a big entry's memory: at the
  // start of each pickle.
  void Reset();

 private:
  // Where the decoder is: the next opcode, the input's end, the memo.
  struct Cur {
    const char* p;
    const char* end;
    const FlatValue* memo;
    size_t memo_n;
  };
  // A simple value: a scalar, a string, or a memoised container. No
  // member is set on construction (a string_view's would be, each time).
  struct Val {
    enum Kind : uint8_t { kNone, kInt, kBool, kFloat, kStr, kRef } kind;
    uint32_t slot;  // kStr: its memo slot or kNoSlot; kRef: the container's
    int64_t i;
    double f;
    const char* sp;  // kStr: the string
    size_t sn;
    std::string_view s() const { return std::string_view(sp, sn); }
  };
  // The hot path (inlined into Entry, its cursor a local)...
  bool Entry(Cur& c);
  bool Common(Cur& c, int field);
  bool Value(Cur& c, int field);
  bool Simple(Cur& c, Val* v);
  bool FromMemo(Cur& c, uint64_t k, Val* v);
  bool ShapeList(Cur& c, int which);
  bool DtypeList(Cur& c, int which);
  bool FrameList(Cur& c);
  // ... and the rest, out of line on cur_ (OutOfLine).
  template <class F>
  bool OutOfLine(Cur& c, F f);
  bool OtherFromMemo(const FlatValue& m, uint64_t k);  // into val_
  bool NewText();  // into val_
  bool Memo(const FlatValue& v);
  bool Key();  // into key_field_
  bool FrameItem();
  bool FrameDict();
  void Restore();

  FlatPickle* fp_ = nullptr;
  Cur cur_{};  // the cursor of the out-of-line steps
  Val val_{};  // what NewText read
  int key_field_ = -1;  // what Key read
  DirectEntry e_;
  // By memo key: the fr::Field of its string, -1 none, kUnset not looked
  // up; 256 slots at least (Reset).
  std::vector<int8_t> slot_field_ = std::vector<int8_t>(256, -2);
  std::vector<FlatValue> scratch_;  // a frame dict's items while it is read
  size_t memo0_ = 0, kept0_ = 0, items0_ = 0;
  uint32_t id0_ = 0;
};

}  // namespace hangdx::ingest
