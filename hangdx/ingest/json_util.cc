#include "hangdx/ingest/json_util.h"

#include <type_traits>
#include <utility>

#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {
namespace {

using json = nlohmann::json;

// nlohmann's json_sax_dom_parser, plus a look at each key: the same DOM, the
// same work per value (one map lookup per key, which operator[] did too),
// and a repeated key is recorded instead of overwriting in silence. Only a
// pointer per open container more, so the parse stays as fast.
class DomBuilder {
 public:
  DomBuilder(json* root, JsonDuplicates* dups) : root_(root), dups_(dups) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return Value(v); }
  bool string(json::string_t& v) { return Value(v); }
  bool binary(json::binary_t& v) { return Value(std::move(v)); }
  bool start_object(size_t /*len: -1 for JSON text*/) { return Open(json::value_t::object); }
  bool start_array(size_t /*len*/) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(json::string_t& k) {
    auto [it, inserted] = stack_.back().node->get_ref<json::object_t&>().try_emplace(k);
    if (!inserted) Duplicate(k);
    stack_.back().key = &it->first;
    element_ = &it->second;
    return true;
  }

  template <class Exception>
  bool parse_error(size_t /*position*/, const std::string& /*last_token*/, const Exception& ex) {
    if constexpr (std::is_same_v<Exception, json::parse_error>) {
      offset_ = static_cast<int64_t>(ex.byte > 0 ? ex.byte - 1 : 0);
      error_ = "unreadable JSON at byte " + std::to_string(offset_) + ": " + JsonWhy(ex);
    } else {
      offset_ = -1;
      error_ = "unreadable JSON: " + JsonWhy(ex);
    }
    return false;
  }

  const std::string& error() const { return error_; }
  int64_t offset() const { return offset_; }

 private:
  struct Level {
    json* node;
    const std::string* key;  // the object's key being filled (its map node's, so stable)
  };

  template <class V>
  json* Place(V&& v) {
    if (stack_.empty()) {
      *root_ = json(std::forward<V>(v));
      return root_;
    }
    json* top = stack_.back().node;
    if (top->is_array()) {
      auto& a = top->get_ref<json::array_t&>();
      a.emplace_back(std::forward<V>(v));
      return &a.back();
    }
    *element_ = json(std::forward<V>(v));
    return element_;
  }
  template <class V>
  bool Value(V&& v) {
    Place(std::forward<V>(v));
    return true;
  }
  bool Open(json::value_t t) {
    stack_.push_back({Place(t), nullptr});
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  // Records key k, repeated in the innermost open object, with its path.
  void Duplicate(const std::string& k) {
    if (!dups_) return;
    if (dups_->count++ >= JsonDuplicates::kKept) return;
    std::string path;
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      const json* n = stack_[i].node;
      if (n->is_array()) {
        path += "[" + std::to_string(n->size() - 1) + "]";
      } else {
        path += (path.empty() ? "" : ".") + *stack_[i].key;
      }
    }
    // A key is shown whole up to 80 bytes: enough to recognise, bounded when hostile.
    std::string shown = k.size() <= 80 ? k : k.substr(0, 77) + "...";
    dups_->first.push_back("\"" + shown + "\" " + (path.empty() ? "at the top level" : "in " + path));
  }

  json* root_;
  JsonDuplicates* dups_;
  std::vector<Level> stack_;
  json* element_ = nullptr;  // the object member the next value fills
  std::string error_;
  int64_t offset_ = -1;
};

}  // namespace

std::string JsonWhy(const std::exception& e) {
  std::string what = e.what();
  size_t cut = what.find("] ");
  return cut == std::string::npos ? what : what.substr(cut + 2);
}

bool ParseJson(std::string_view data, nlohmann::json* doc, std::string* error, int64_t* offset, JsonDuplicates* dups) {
  try {
    DomBuilder builder(doc, dups);
    if (json::sax_parse(data.begin(), data.end(), &builder)) return true;
    *doc = json();
    *error = builder.error();
    *offset = builder.offset();
  } catch (const json::exception& e) {  // excessive sizes: not thrown for text input
    *doc = json();
    *offset = -1;
    *error = "unreadable JSON: " + JsonWhy(e);
  }
  return false;
}

void WarnDuplicateKeys(const JsonDuplicates& dups, int64_t rank, RecordSink* out) {
  for (const std::string& d : dups.first)
    out->Diag(model::Diagnostic::Severity::kWarning, "duplicate JSON key " + d + ": the later value is used", rank);
  if (dups.count > dups.first.size())
    out->Diag(model::Diagnostic::Severity::kWarning,
              std::to_string(dups.count - dups.first.size()) + " more duplicate JSON keys: the later values are used",
              rank);
}

}  // namespace hangdx::ingest
