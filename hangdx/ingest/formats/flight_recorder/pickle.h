// hangdx/ingest/formats/flight_recorder/pickle.h
// A pickle machine that only builds data: None, bool, int, float, str,
// bytes, list, tuple, dict, set. It implements protocols 2-5 (and the
// integer/float/memo opcodes of protocols 0-1) with full memo support, so a
// container memoised once and fetched many times (Flight Recorder shares one
// frame dict per distinct stack frame) is one shared object.
//
// It executes nothing. Every opcode that imports, calls or builds objects
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID,
// BINPERSID, EXT1/2/4, out-of-band buffers) is refused with an error that
// names the opcode and its byte offset.
//
//   PickleDocument doc;
//   PickleError err;
//   if (!doc.Parse(bytes, &err)) print(err.offset, err.message);
//   const PickleValue& root = doc.root();
//
// Upstream writer: torch/csrc/jit/serialization/pickler.cpp via
// TraceUtils.h::pickle_str (protocol 2), and Python's pickle module.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hangdx::ingest {

struct PickleContainer;

// One unpickled value, 16 bytes: a kind and one payload. Strings and bytes
// are views into the document's input buffer, containers are pointers into
// the document's arena: a PickleValue is valid only while its
// PickleDocument lives. An empty container that nothing shares (an EMPTY_LIST
// never memoised) points to one shared empty container and costs no
// allocation, so a pickle of ten million `]` takes its stack and no more
// (it took about 100 bytes per input byte).
class PickleValue {
 public:
  enum class Kind : uint8_t { kNone, kBool, kInt, kBigInt, kFloat, kStr, kBytes, kList, kTuple, kDict, kSet };

  PickleValue() : kind_(static_cast<uint64_t>(Kind::kNone)), size_(0) { u_.i = 0; }
  static PickleValue Bool(bool b) { return Scalar(Kind::kBool, b ? 1 : 0); }
  static PickleValue Int(int64_t i) { return Scalar(Kind::kInt, i); }
  static PickleValue Float(double f);
  // kStr (UTF-8), kBytes or kBigInt (little-endian two's complement): a view.
  static PickleValue Text(Kind kind, std::string_view s);
  // kList, kTuple, kDict or kSet; `c` non-null.
  static PickleValue Container(Kind kind, PickleContainer* c);

  Kind kind() const { return static_cast<Kind>(kind_); }
  bool b() const { return kind() == Kind::kBool && u_.i != 0; }
  int64_t i() const { return kind() == Kind::kInt || kind() == Kind::kBool ? u_.i : 0; }
  double f() const { return kind() == Kind::kFloat ? u_.f : 0; }
  std::string_view s() const;  // "" unless kStr, kBytes or kBigInt
  // The items of a container kind (never null for those), nullptr otherwise.
  PickleContainer* c() const { return is_container() ? u_.c : nullptr; }

  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_seq() const { return kind() == Kind::kList || kind() == Kind::kTuple; }
  bool is_container() const { return kind() >= Kind::kList; }
  // Dict lookup by string key; nullptr if absent or not a dict. Linear in the
  // dict's size (Flight Recorder dicts have at most ~25 keys).
  const PickleValue* Get(std::string_view key) const;
  // Number of items (pairs for a dict); 0 for scalars.
  size_t size() const;

 private:
  static PickleValue Scalar(Kind kind, int64_t i) {
    PickleValue v;
    v.kind_ = static_cast<uint64_t>(kind);
    v.u_.i = i;
    return v;
  }
  uint64_t kind_ : 8;
  uint64_t size_ : 56;  // length of a string, bytes or big int
  union {
    int64_t i;
    double f;
    const char* p;
    PickleContainer* c;
  } u_;
};
static_assert(sizeof(PickleValue) == 16, "a pickle of N values takes 16N bytes of stack");

// Items of a list, tuple or set; a dict stores key, value, key, value, ...
struct PickleContainer {
  std::vector<PickleValue> items;
  // For a streamed parse (PickleDocument::ParseViewStreaming): the
  // container's creation number (0 in a plain parse), and whether it
  // outlives the streamed item that made it (the memo gives it out again,
  // or a container that does holds it). A streamed item's other
  // containers are reused for later values once the item was handed over.
  uint64_t serial : 63 = 0;
  uint64_t stable : 1 = 1;
};

// Inline: the converter calls these once per value it reads (as calls they
// were 4 % of a dump's reading).
inline std::string_view PickleValue::s() const {
  Kind k = kind();
  if (k != Kind::kStr && k != Kind::kBytes && k != Kind::kBigInt) return {};
  return {u_.p, static_cast<size_t>(size_)};
}

inline size_t PickleValue::size() const {
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

// Takes the items of a streamed list (PickleDocument::ParseViewStreaming),
// one at a time, in order, each once it is complete.
class PickleItemSink {
 public:
  virtual ~PickleItemSink() = default;
  // `item` and what it holds are valid during the call only, except the
  // containers marked stable, which live as long as the document.
  virtual void Item(const PickleValue& item) = 0;
};

// Where and why parsing stopped.
struct PickleError {
  int64_t offset = -1;  // byte offset of the offending opcode
  std::string message;
};

// Working memory of the pickle machine, kept by a PickleDocument between
// parses so that parsing many files in a row reuses its allocations.
struct PickleScratch {
  std::deque<PickleContainer> arena;  // containers; the first `used` are live
  size_t used = 0;
  std::vector<PickleValue> stack;
  std::vector<size_t> marks;
  std::vector<PickleValue> memo;
  std::vector<bool> memo_set;
  // A streamed parse: the serial of each memo slot's container when it was
  // stored, and the containers free for reuse.
  std::vector<uint64_t> memo_serial;
  std::vector<PickleContainer*> free;
};

// Owns the input bytes and every container built from them.
// Not copyable (values point into it); movable. Parse again to reuse it: the
// previous values are invalidated, the memory is kept.
class PickleDocument {
 public:
  PickleDocument() = default;
  PickleDocument(const PickleDocument&) = delete;
  PickleDocument& operator=(const PickleDocument&) = delete;
  PickleDocument(PickleDocument&&) = default;
  PickleDocument& operator=(PickleDocument&&) = default;

  // Parses one pickle from `data` (taken over by the document). Returns false
  // and fills *err on a refused opcode, truncation, malformed operands, stack
  // or memo misuse, or a missing STOP. Bytes after STOP are ignored.
  bool Parse(std::string data, PickleError* err);
  // Same, reading `data` in place: the caller keeps it alive (and unchanged)
  // as long as the document's values are used. For memory-mapped files.
  bool ParseView(std::string_view data, PickleError* err);

  // ParseView, streaming the list that is the value of `key` in the
  // top-level dict (its first such key): each item that a MARK ... APPENDS
  // adds to it goes to sink->Item as soon as it is complete, and not into
  // the list; the containers only that item reached are then reused, so
  // that a Flight Recorder dump of N entries holds about one entry's values
  // at a time instead of N. Items added otherwise (APPEND) stay in the list,
  // and streaming stops there, so the sink's items always come before
  // those. A pickle whose memo use the streaming cannot follow safely (a
  // DUP, POP or POP_MARK, a value stored into a container made before the
  // item) is read as ParseView reads it, with items streamed until then.
  // Returns what ParseView returns; items may have gone to the sink
  // before a later error. `streamed()` counts them.
  bool ParseViewStreaming(std::string_view data, std::string_view key, PickleItemSink* sink, PickleError* err);
  // Items the last parse handed to a sink.
  size_t streamed() const { return streamed_; }
  // Containers the document holds storage for (its memory, for tests).
  size_t containers() const { return scratch_->arena.size(); }

  const PickleValue& root() const { return root_; }
  // Highest pickle protocol announced by PROTO, 0 if none.
  int protocol() const { return protocol_; }

 private:
  bool Run(std::string_view data, PickleError* err, std::string_view key = {}, PickleItemSink* sink = nullptr);

  std::unique_ptr<std::string> data_;  // heap-held: views survive a move
  std::unique_ptr<PickleScratch> scratch_ = std::make_unique<PickleScratch>();
  PickleValue root_;
  int protocol_ = 0;
  size_t streamed_ = 0;
};

// Scratch past this many elements is freed rather than kept for the next
// file (PickleDocument, FlatPickle): a reader lives as long as its parser
// thread, and one hostile pickle must not pin its peak memory for the rest
// of the load.
constexpr size_t kKeptPickleScratch = size_t{1} << 16;

// Empties scratch vector *v, keeping its capacity up to kKeptPickleScratch.
template <typename V>
void ClearPickleScratch(V* v) {
  if (v->capacity() > kKeptPickleScratch)
    V().swap(*v);
  else
    v->clear();
}

// True when `data` looks like a pickle (starts with PROTO 2..5).
bool LooksLikePickle(std::string_view data);

}  // namespace hangdx::ingest
