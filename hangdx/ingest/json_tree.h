// hangdx/ingest/json_tree.h
// JsonTree: a read-only JSON document parsed by simdjson (Debian's
// libsimdjson-dev) into a flat array of values, for the readers of large
// JSON inputs (Flight Recorder JSON dumps: 1 MB per rank at 2,000 entries).
// simdjson parses at about 1 GB/s per core where nlohmann::json's DOM ran
// at 60 MB/s; the tree keeps each container's children side by side, so
// element i of an array and a member of an object are found without a walk.
//
// It accepts exactly the documents that ingest's ParseJson (json_util.h,
// nlohmann) reads with no warning, and gives the same values; anything
// else makes Parse return false, and the caller reads the text with
// ParseJson, whose errors, byte offsets and duplicate-key warnings the
// users already see. So a syntax error, a key repeated in an object, a
// \u escape of a UTF-16 surrogate (nlohmann and simdjson check pairs
// differently), nesting deeper than 1,024, an integer beyond 64 bits or a
// number out of range (1E400) are each the old reader's to report.
//
//   JsonTree tree;
//   if (tree.Parse(text)) {
//     const JsonTree::Value* v = tree.Find(tree.root(), "version");
//     std::string_view s;
//     if (v && v->str(&s)) ...
//   } else {
//     ParseJson(text, &doc, &error, &offset, &dups);  // says why
//   }
//
// Not thread-safe; reuse one per thread (its buffers grow to the largest
// document and are kept). Values and the string views they give stay
// valid until the next Parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace hangdx::ingest {

class JsonTree {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kArray, kObject };

  // One JSON value. A number is kInt when it fits int64_t, else kUint (a
  // non-negative one up to 2^64 - 1), else kDouble when it has a fraction
  // or an exponent, as nlohmann classes them.
  struct Value {
    Kind kind = Kind::kNull;
    // String length, array element count, object member count.
    uint32_t size = 0;
    union {
      bool b;
      int64_t i;
      uint64_t u;
      double d;
      const char* s;   // kString: `size` bytes, unescaped, not terminated
      uint32_t first;  // kArray, kObject: index of the first child in the tree
    };
    Value() : i(0) {}

    bool str(std::string_view* out) const {
      if (kind != Kind::kString) return false;
      *out = std::string_view(s, size);
      return true;
    }
  };

  JsonTree();
  ~JsonTree();
  JsonTree(const JsonTree&) = delete;
  JsonTree& operator=(const JsonTree&) = delete;

  // Parses `data` (a UTF-8 byte order mark first is skipped). Returns false,
  // with the tree empty, when the document is not one that ParseJson reads
  // without a warning, as the file banner lists; never throws.
  bool Parse(std::string_view data);

  // The document's top-level value; valid after a successful Parse.
  const Value& root() const { return values_[0]; }
  // Element `i` (< size) of array `a`.
  const Value& Element(const Value& a, size_t i) const { return values_[a.first + i]; }
  // Member `i` (< size) of object `o`: its key (a kString value) and value,
  // in the document's order.
  const Value& Key(const Value& o, size_t i) const { return values_[o.first + 2 * i]; }
  const Value& Member(const Value& o, size_t i) const { return values_[o.first + 2 * i + 1]; }
  // The value of `key` in object `o`, nullptr when absent or `o` is not an
  // object. A linear search: for the few keys of a header or a config.
  const Value* Find(const Value& o, std::string_view key) const;

  // Frees the buffers (after a document much larger than the usual ones).
  void Release();

 private:
  struct Impl;  // simdjson's parser and the padded copy of the text
  std::unique_ptr<Impl> impl_;
  std::vector<Value> values_;  // root first, then each container's children side by side
};

}  // namespace hangdx::ingest
