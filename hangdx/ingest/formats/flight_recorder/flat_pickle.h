// hangdx/ingest/formats/flight_recorder/flat_pickle.h
// The fast reader of Flight Recorder pickles: the opcodes that
// torch::jit::Pickler writes for a dump (protocol 2: EMPTY_DICT/EMPTY_LIST,
// MARK ... SETITEMS/APPENDS, TUPLE1-3, BINUNICODE, BININT*, LONG1,
// BINFLOAT, NONE, NEWTRUE/NEWFALSE, BINPUT/BINGET and their LONG_ forms),
// decoded into flat 16-byte values whose containers keep their items side
// by side, with the top-level "entries" list streamed entry by entry (the
// items an entry made are reused for the next one, so memory stays flat in
// entries, as PickleDocument::ParseViewStreaming's does).
//
// It is a shortcut, not a second machine: it declines (Read returns false)
// whatever it does not know or that a dump never holds (any other opcode, a
// truncation, a container filled twice or filled after it was memoised, a
// memo key out of order, a MARK of the streamed list closed by another
// opcode than APPENDS, ...), and the caller then reads the file with
// PickleDocument, which says what is wrong. What it accepts it reads as
// PickleDocument would: the same values, in the same order, with the same
// sharing (a memoised container is one value, `Identity`), so one
// converter serves both (flight_recorder.cc, FlightRecorder.
// FastAndGeneralPickleReadersAgree). Why: the general machine's per-value
// bookkeeping for streaming (serials, reuse, the pre-walk of memo keys
// read back) was most of a dump's reading.
//
//   FlatPickle fp;
//   struct Sink : FlatEntrySink { void Entry(const FlatValue& e) override { ... } } sink;
//   if (fp.Read(bytes, &sink)) use(fp.root()); else /* PickleDocument */;
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hangdx/ingest/formats/flight_recorder/pickle.h"

namespace hangdx::ingest {

class FlatPickle;
class DirectDecoder;

// One value: a kind and one payload, 16 bytes. Strings are views into the
// input; a container's items are in its FlatPickle (FlatPickle::Items).
class FlatValue {
 public:
  using Kind = PickleValue::Kind;
  Kind kind() const { return static_cast<Kind>(kind_); }
  bool b() const { return kind() == Kind::kBool && u_.i != 0; }
  int64_t i() const { return kind() == Kind::kInt || kind() == Kind::kBool ? u_.i : 0; }
  double f() const { return kind() == Kind::kFloat ? u_.f : 0; }
  // "" unless kStr or kBigInt (little-endian two's complement).
  std::string_view s() const {
    return kind() == Kind::kStr || kind() == Kind::kBigInt ? std::string_view(u_.p, n_) : std::string_view();
  }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_seq() const { return kind() == Kind::kList || kind() == Kind::kTuple; }
  bool is_container() const { return kind() >= Kind::kList; }
  // Items held (a dict's keys and values both count); 0 for scalars.
  uint32_t slots() const { return is_container() ? n_ : 0; }
  // Number of items as PickleValue::size() counts them (pairs for a dict).
  size_t size() const { return is_dict() ? n_ / 2 : slots(); }

 private:
  friend class FlatPickle;
  friend class DirectDecoder;  // builds the strings and frame dicts it memoises
  enum Flag : uint8_t { kKept = 1, kSealed = 2 };
  uint8_t kind_ = 0;   // a Kind
  uint8_t flags_ = 0;  // Flag: items in the kept store; memoised (never filled again)
  uint16_t unused_ = 0;
  uint32_t n_ = 0;  // a string's length, a container's slots
  union {
    int64_t i;
    double f;
    const char* p;
    struct {
      uint32_t first;  // its items: FlatPickle::Items
      uint32_t id;     // creation number: the container's identity
    } c;
  } u_ = {0};
};
static_assert(sizeof(FlatValue) == 16, "a value is 16 bytes");

// Takes the items of the streamed "entries" list, in order, each once it
// is complete.
class FlatEntrySink {
 public:
  virtual ~FlatEntrySink() = default;
  // `item` and its items are valid during the call only, except the
  // containers that are Stable.
  virtual void Entry(const FlatValue& item) = 0;
  // Whether the sink reads entries from their bytes itself (Direct): asked
  // once per Read.
  virtual bool TakesDirect() const { return false; }
  // Reads the entry whose EMPTY_DICT is at data[at] itself, straight from
  // the bytes (a DirectDecoder on `fp`, direct_pickle.h), and returns the
  // offset past it; or declines it (0), leaving `fp` as it was, and Entry
  // gets it as usual.
  virtual size_t Direct(FlatPickle* fp, std::string_view data, size_t at) { return 0; }
};

// Reads one pickle at a time; keep one per thread, its memory is reused.
class FlatPickle {
 public:
  // Reads `data` (kept alive by the caller while values are used),
  // streaming the items of the top-level dict's first "entries" list into
  // *sink. False: declined (see above); what went to the sink until then
  // is what PickleDocument would give for the same entries.
  bool Read(std::string_view data, FlatEntrySink* sink);
  const FlatValue& root() const { return root_; }
  // The slots of container `c` (a dict: key, value, key, value, ...).
  const FlatValue* Items(const FlatValue& c) const {
    return (c.flags_ & FlatValue::kKept ? kept_.data() : items_.data()) + c.u_.c.first;
  }
  // Whether `v` lives as long as the document: a scalar, a container
  // memoised or held by one, or an empty one never memoised. The others
  // are an entry's own, reused later.
  static bool Stable(const FlatValue& v) {
    return !v.is_container() || (v.flags_ & FlatValue::kKept) || v.n_ == 0;
  }
  // One address per container (its creation number), for caches keyed by
  // identity; a scalar's is its own address. As PickleDocument's values:
  // every empty container never memoised is one (its SharedEmpty).
  static const void* Identity(const FlatValue& v) {
    if (!v.is_container()) return &v;
    if (v.n_ == 0 && !(v.flags_ & FlatValue::kKept)) return &kSharedEmpty;
    return reinterpret_cast<const void*>(static_cast<uintptr_t>(v.u_.c.id) * 16 + 8);
  }
  // Entries handed to the sink by the last Read.
  size_t streamed() const { return streamed_; }
  // Frees what the last Read's values took beyond a small file's (call once
  // they are read: a document lives as long as its parser thread).
  void Release();

 private:
  friend class DirectDecoder;  // reads and extends the memo and the stores
  // kLooking: the list not met yet; kDone: not (or no more) streaming;
  // kListed: the list is on the stack at list_index_; kActive: its items'
  // MARK is open at item_mark_. In this order (StreamStep runs from kListed).
  enum class Stream { kLooking, kDone, kListed, kActive };
  static const char kSharedEmpty;  // the identity of empty containers (Identity)
  bool Run(std::string_view d, FlatEntrySink* sink);
  bool Fill(unsigned char op);
  bool Number(unsigned char op, std::string_view d, size_t* at);
  bool Tuple(size_t from);
  bool Keep(FlatValue* v, int depth);
  bool Memoize(uint64_t key);
  void ListPushed();
  void HandOver(FlatEntrySink* sink);
  void StreamStep(unsigned char op, FlatEntrySink* sink);
  size_t Base() const { return marks_.empty() ? 0 : marks_.back(); }
  bool NewContainer(FlatValue::Kind k, uint32_t first, uint32_t n, FlatValue* out);

  std::vector<FlatValue> stack_;
  std::vector<size_t> marks_;
  std::vector<FlatValue> memo_;   // by key; kind kNone with flags_ 0xff: never stored
  std::vector<FlatValue> items_;  // containers' items (an entry's are dropped once it is handed over)
  std::vector<FlatValue> kept_;   // the items of memoised containers and what they hold
  FlatValue root_;
  uint32_t next_id_ = 0;
  Stream stream_ = Stream::kLooking;
  size_t list_index_ = 0, item_mark_ = 0, item_begin_ = 0;
  size_t streamed_ = 0;
  // Whether entries may go to the sink's Direct: it takes them, and no memo
  // slot was stored twice (its tables are by memo key).
  bool direct_ = false;
};

}  // namespace hangdx::ingest
