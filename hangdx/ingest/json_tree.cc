#include "hangdx/ingest/json_tree.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

namespace hangdx::ingest {
namespace {

namespace dom = simdjson::dom;
using Kind = JsonTree::Kind;
using Value = JsonTree::Value;

// nlohmann's parser has no depth limit (it is iterative); simdjson's is
// 1,024 levels, as is this tree's recursion. No dump nests beyond 8.
constexpr size_t kMaxDepth = 1024;

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Whether `data` holds a \u escape of a UTF-16 surrogate (\uD800 to
// \uDFFF). nlohmann requires a high one followed by a low one; simdjson
// 3.0.1 checks the pair less strictly (it has accepted a lone low one), so
// a document with any is left to nlohmann. Real dumps have none:
// nlohmann's dump writes UTF-8 as is; only Python's ensure_ascii writes
// them, for characters beyond U+FFFF. A backslash is found by memchr, so
// the scan runs at memory speed.
bool HasSurrogateEscape(std::string_view data) {
  const char* p = data.data();
  const char* end = p + data.size();
  while ((p = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>(end - p)))) != nullptr) {
    if (end - p >= 6 && p[1] == 'u' && (p[2] == 'd' || p[2] == 'D') && IsHex(p[3]) && !(p[3] >= '0' && p[3] <= '7'))
      return true;
    p += 2;  // the escaped character is never the start of another escape
    if (p >= end) break;
  }
  return false;
}

// Fills the tree from simdjson's DOM: each container's children take one
// block of values, appended when the container is reached, so a child's
// index is its container's `first` plus its position.
class Builder {
 public:
  explicit Builder(std::vector<Value>* values) : values_(*values) {}

  // Fills values_[at] from `e`. Scalars are written in place (inlined into
  // the loops over a container's children: a call per value was a fifth
  // of the tree's time); containers go to FillArray / FillObject.
  __attribute__((always_inline)) bool Fill(dom::element e, size_t at, size_t depth) {
    Value& v = values_[at];  // not kept past a container: its block may move the vector
    switch (e.type()) {
      case dom::element_type::NULL_VALUE:
        v.kind = Kind::kNull;
        return true;
      case dom::element_type::BOOL:
        v.kind = Kind::kBool;
        v.b = e.get_bool().value_unsafe();
        return true;
      case dom::element_type::INT64:
        v.kind = Kind::kInt;
        v.i = e.get_int64().value_unsafe();
        return true;
      case dom::element_type::UINT64:
        v.kind = Kind::kUint;
        v.u = e.get_uint64().value_unsafe();
        return true;
      case dom::element_type::DOUBLE:
        v.kind = Kind::kDouble;
        v.d = e.get_double().value_unsafe();
        return true;
      case dom::element_type::STRING: {
        std::string_view s = e.get_string().value_unsafe();
        if (s.size() > std::numeric_limits<uint32_t>::max()) return false;
        v.kind = Kind::kString;
        v.s = s.data();
        v.size = static_cast<uint32_t>(s.size());
        return true;
      }
      case dom::element_type::ARRAY:
        return depth < kMaxDepth && FillArray(e.get_array().value_unsafe(), at, depth);
      case dom::element_type::OBJECT:
        return depth < kMaxDepth && FillObject(e.get_object().value_unsafe(), at, depth);
    }
    return false;
  }

 private:
  // simdjson's sizes saturate at 2^24 - 1: beyond, the children are counted.
  template <class C>
  static size_t Count(C c) {
    size_t n = c.size();
    if (n < 0xFFFFFF) return n;
    n = 0;
    for (auto it = c.begin(); it != c.end(); ++it) ++n;
    return n;
  }

  // Reserves `n` values for a container's children; false past 2^32.
  bool Block(size_t at, Kind kind, size_t members, size_t n) {
    size_t first = values_.size();
    if (first + n > std::numeric_limits<uint32_t>::max()) return false;
    values_.resize(first + n);
    Value& v = values_[at];
    v.kind = kind;
    v.size = static_cast<uint32_t>(members);
    v.first = static_cast<uint32_t>(first);
    return true;
  }

  __attribute__((noinline)) bool FillArray(dom::array a, size_t at, size_t depth) {
    size_t n = Count(a);
    if (!Block(at, Kind::kArray, n, n)) return false;
    size_t child = values_[at].first;
    for (dom::element e : a)
      if (!Fill(e, child++, depth + 1)) return false;
    return true;
  }

  __attribute__((noinline)) bool FillObject(dom::object o, size_t at, size_t depth) {
    size_t n = Count(o);
    if (!Block(at, Kind::kObject, n, 2 * n)) return false;
    size_t child = values_[at].first;
    for (dom::key_value_pair kv : o) {
      if (kv.key.size() > std::numeric_limits<uint32_t>::max()) return false;
      Value& key = values_[child];
      key.kind = Kind::kString;
      key.s = kv.key.data();
      key.size = static_cast<uint32_t>(kv.key.size());
      if (!Fill(kv.value, child + 1, depth + 1)) return false;
      child += 2;
    }
    return DistinctKeys(values_[at]);
  }

  // Whether the keys of object `o` differ. nlohmann keeps a repeated key's
  // later value and ParseJson warns; here it is refused, for ParseJson to
  // read. Torch's dumps (nlohmann::json, a std::map) write keys in sorted
  // order: one comparison per key shows they differ; other orders are sorted.
  bool DistinctKeys(const Value& o) {
    auto key = [&](size_t i) {
      const Value& k = values_[o.first + 2 * i];
      return std::string_view(k.s, k.size);
    };
    // Keys are short and differ early: compared inline (memcmp calls were
    // 2 % of a dump's reading), bytes as unsigned, as std::string does.
    auto less = [](std::string_view a, std::string_view b) {
      size_t n = std::min(a.size(), b.size());
      for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
      return a.size() < b.size();
    };
    bool ascending = true;
    for (size_t i = 1; i < o.size && ascending; ++i) ascending = less(key(i - 1), key(i));
    if (ascending) return true;
    keys_.clear();
    for (size_t i = 0; i < o.size; ++i) keys_.push_back(key(i));
    std::sort(keys_.begin(), keys_.end());
    return std::adjacent_find(keys_.begin(), keys_.end()) == keys_.end();
  }

  std::vector<Value>& values_;
  std::vector<std::string_view> keys_;
};

}  // namespace

struct JsonTree::Impl {
  dom::parser parser{std::numeric_limits<uint32_t>::max() - simdjson::SIMDJSON_PADDING};
  // The text with simdjson's padding after it: its SIMD loads read up to
  // SIMDJSON_PADDING bytes past the end, which a mapped file may not have.
  std::unique_ptr<char[]> padded;
  size_t capacity = 0;
};

JsonTree::JsonTree() = default;
JsonTree::~JsonTree() = default;

bool JsonTree::Parse(std::string_view data) {
  values_.clear();
  constexpr std::string_view kBom = "\xEF\xBB\xBF";  // nlohmann skips one too
  if (data.substr(0, kBom.size()) == kBom) data.remove_prefix(kBom.size());
  if (data.size() >= std::numeric_limits<uint32_t>::max() - simdjson::SIMDJSON_PADDING) return false;
  if (HasSurrogateEscape(data)) return false;
  if (!impl_) impl_ = std::make_unique<Impl>();
  if (impl_->capacity < data.size() + simdjson::SIMDJSON_PADDING) {
    impl_->capacity = data.size() + simdjson::SIMDJSON_PADDING;
    impl_->padded.reset(new char[impl_->capacity]);
  }
  std::memcpy(impl_->padded.get(), data.data(), data.size());
  std::memset(impl_->padded.get() + data.size(), 0, simdjson::SIMDJSON_PADDING);
  dom::element root;
  if (impl_->parser.parse(impl_->padded.get(), data.size(), /*realloc_if_needed=*/false).get(root) != simdjson::SUCCESS)
    return false;
  values_.resize(1);
  Builder builder(&values_);
  if (!builder.Fill(root, 0, 0)) {
    values_.clear();
    return false;
  }
  return true;
}

const JsonTree::Value* JsonTree::Find(const Value& o, std::string_view key) const {
  if (o.kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < o.size; ++i) {
    const Value& k = Key(o, i);
    if (std::string_view(k.s, k.size) == key) return &Member(o, i);
  }
  return nullptr;
}

void JsonTree::Release() {
  impl_.reset();
  values_ = std::vector<Value>();
}

}  // namespace hangdx::ingest
