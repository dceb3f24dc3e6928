#include "hangdx/analyze/checks/known_bugs/signatures.h"

#include <re2/re2.h>

#include <cctype>
#include <optional>
#include <set>

#include "hangdx/base/key_value_rows.h"

namespace hangdx::analyze::known_bugs {

namespace {

// The built-in data, generated at build time from known_bugs.sigs
// (cmake/embed_messages.cmake): {name, text} pairs, then {nullptr, nullptr}.
#include "hangdx/analyze/checks/known_bugs/builtin_signatures.inc"

// Compares the first components of `v` with `bound`, as many as `bound`
// has: an upper bound "2.17" covers every 2.17.x.
int ComparePrefix(const Version& v, const Version& bound) {
  for (size_t i = 0; i < bound.size(); ++i) {
    int64_t x = i < v.size() ? v[i] : 0;
    if (x != bound[i]) return x < bound[i] ? -1 : 1;
  }
  return 0;
}

// Reads one row's `key value` lines.
class RowReader {
 public:
  RowReader(std::string_view file, int64_t line) : file_(file) { sig_.line = line; }

  Status Add(std::string_view key, std::string_view value, int64_t line) {
    static const std::set<std::string_view> kRepeatable = {"frame", "setting"};
    bool fresh = seen_.insert(std::string(key)).second;
    if (!kRepeatable.count(key) && !fresh) return Error(line, "key '" + std::string(key) + "' given twice");
    std::string v(value);
    if (key == "bug") {
      sig_.id = v;
    } else if (key == "library") {
      if (v != "nccl" && v != "rccl" && v != "pytorch" && v != "hccl")
        return Error(line, "library must be nccl, rccl, pytorch or hccl, not '" + v + "'");
      sig_.library = v;
    } else if (key == "affected") {
      sig_.affected = v;
    } else if (key == "fixed") {
      sig_.fixed = v;
    } else if (key == "frame") {
      sig_.frames.push_back(v);
    } else if (key == "setting") {
      size_t eq = v.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == v.size() || v.find(' ') != std::string::npos)
        return Error(line, "setting must be NAME=VALUE, not '" + v + "'");
      sig_.settings.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (key == "version_required") {
      sig_.version_required = true;
    } else if (key == "summary") {
      sig_.summary = v;
    } else if (key == "workaround") {
      sig_.workaround = v;
    } else if (key == "url") {
      sig_.url = v;
    } else if (key == "stack_file") {
      sig_.stack_file = v;
    } else if (key == "stack_version") {
      sig_.stack_version = v;
    } else {
      return Error(line, "unknown key '" + std::string(key) + "'");
    }
    return Status::Ok();
  }

  StatusOr<Signature> Finish() {
    for (const char* key : {"library", "affected", "fixed", "frame", "summary", "workaround", "url"})
      if (!seen_.count(key)) return Error(sig_.line, "signature " + sig_.id + " has no '" + key + "'");
    Status s = sig_.Compile();
    if (!s.ok()) return Error(sig_.line, "signature " + sig_.id + ": " + s.message());
    return std::move(sig_);
  }

 private:
  Status Error(int64_t line, const std::string& what) const {
    return InvalidArgument(file_ + ":" + std::to_string(line) + ": " + what);
  }
  std::string file_;
  Signature sig_;
  std::set<std::string> seen_;
};

struct BuiltinState {
  std::vector<Signature> signatures;
  std::vector<std::string> errors;
  std::string text;
};

const BuiltinState& Builtin() {
  static const BuiltinState* state = [] {
    auto* s = new BuiltinState;
    for (const auto* f = kBuiltinSignatureFiles; f->first != nullptr; ++f) {
      s->text += f->second;
      StatusOr<std::vector<Signature>> one = ParseSignatures(f->second, f->first);
      if (!one.ok()) {
        s->errors.push_back(one.status().message());
        continue;
      }
      for (Signature& sig : *one) s->signatures.push_back(std::move(sig));
    }
    return s;
  }();
  return *state;
}

}  // namespace

Version ParseVersion(std::string_view text) {
  Version v;
  size_t i = 0;
  while (i < text.size() && !isdigit(static_cast<unsigned char>(text[i]))) ++i;
  while (i < text.size() && v.size() < 3 && isdigit(static_cast<unsigned char>(text[i]))) {
    int64_t n = 0;
    while (i < text.size() && isdigit(static_cast<unsigned char>(text[i])) && n < (int64_t{1} << 40))
      n = n * 10 + (text[i++] - '0');
    v.push_back(n);
    // "2.21.5" and "(2, 21, 5)" separate components; anything else ends the version.
    if (i < text.size() && text[i] == '.') {
      ++i;
    } else if (i + 1 < text.size() && text[i] == ',' && text[i + 1] == ' ') {
      i += 2;
    } else {
      break;
    }
  }
  return v;
}

bool Signature::MatchesStack(const model::StackSample& s) const {
  for (const auto& re : compiled_) {
    bool found = false;
    for (const model::Frame& f : s.frames)
      if (RE2::PartialMatch(f.name, *re)) {
        found = true;
        break;
      }
    if (!found) return false;
  }
  return !compiled_.empty();
}

bool Signature::NamesFrame(const model::Frame& f) const {
  for (const auto& re : compiled_)
    if (RE2::PartialMatch(f.name, *re)) return true;
  return false;
}

Affects Signature::AffectsVersion(const Version& v) const {
  if (v.empty()) return Affects::kUnknown;
  if (!lo_.empty() && ComparePrefix(v, lo_) < 0) return Affects::kNo;
  if (!hi_.empty() && ComparePrefix(v, hi_) > 0) return Affects::kNo;
  return Affects::kYes;
}

Status Signature::Compile() {
  compiled_.clear();
  for (const std::string& f : frames) {
    auto re = std::make_shared<const RE2>(f, RE2::Quiet);
    if (!re->ok()) return InvalidArgument("frame '" + f + "': " + re->error());
    compiled_.push_back(std::move(re));
  }
  // "A-B", "A-" (and later), "-B" (and earlier), "A" (every A.x).
  size_t dash = affected.find('-');
  std::string_view lo = std::string_view(affected).substr(0, dash);
  std::string_view hi = dash == std::string::npos ? lo : std::string_view(affected).substr(dash + 1);
  lo_ = ParseVersion(lo);
  hi_ = ParseVersion(hi);
  if (lo_.empty() && hi_.empty()) return InvalidArgument("affected '" + affected + "' names no version");
  return Status::Ok();
}

StatusOr<std::vector<Signature>> ParseSignatures(std::string_view text, std::string_view name) {
  std::vector<Signature> out;
  std::set<std::string> ids;
  std::optional<RowReader> reader;
  Status s = ReadKeyValueRows(
      text,
      [&](const KeyValueLine& l) -> Status {
        if (l.starts_row) {
          if (l.key != "bug")
            return InvalidArgument(std::string(name) + ":" + std::to_string(l.line) + ": a row starts with 'bug ID'");
          reader.emplace(name, l.line);
        }
        return reader->Add(l.key, l.value, l.line);
      },
      [&]() -> Status {
        HANGDX_ASSIGN_OR_RETURN(Signature sig, reader->Finish());
        if (!ids.insert(sig.id).second)
          return InvalidArgument(std::string(name) + ":" + std::to_string(sig.line) + ": duplicate bug id " + sig.id);
        out.push_back(std::move(sig));
        return Status::Ok();
      });
  HANGDX_RETURN_IF_ERROR(s);
  return out;
}

const std::vector<Signature>& BuiltinSignatures() { return Builtin().signatures; }
const std::vector<std::string>& BuiltinSignatureErrors() { return Builtin().errors; }
std::string_view BuiltinSignatureText() { return Builtin().text; }

}  // namespace hangdx::analyze::known_bugs
