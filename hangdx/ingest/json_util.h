// hangdx/ingest/json_util.h
// Pieces shared by the JSON input formats (Flight Recorder JSON, wait
// snapshots, device schedules and snapshots).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hangdx::ingest {

class RecordSink;

// Returns a JSON parser exception's message without nlohmann's
// "[json.exception...] " tag, for a diagnostic ("syntax error while parsing
// value - unexpected end of input"). Never fails.
std::string JsonWhy(const std::exception& e);

// The keys that occurred twice in one object of a parsed document. JSON
// allows it (RFC 8259 says names "SHOULD be unique") and nlohmann keeps the
// later value silently; a hand-edited or concatenated dump is where it
// happens, and the earlier value is then lost, so the readers warn.
struct JsonDuplicates {
  static constexpr size_t kKept = 16;  // described one by one; the rest counted
  // Total number of repeated keys in the document.
  size_t count = 0;
  // The first kKept, each as "\"key\" in PATH" (PATH like
  // "entries[3].frames[0]") or "\"key\" at the top level".
  std::vector<std::string> first;
};

// Parses `data` as one JSON document into *doc. On failure returns false,
// with *error = "unreadable JSON at byte N: why" and *offset = N for a
// syntax error, or "unreadable JSON: why" and *offset = -1 for another
// failure (a number out of range: 1E400). A key repeated in one object
// keeps its later value (as nlohmann::json::parse does) and, when `dups` is
// given, is recorded there. Same speed as nlohmann::json::parse (the DOM is
// built by an equivalent SAX handler). Never throws.
bool ParseJson(std::string_view data, nlohmann::json* doc, std::string* error, int64_t* offset,
               JsonDuplicates* dups = nullptr);

// Writes one warning per duplicate key in `dups` to `out` for `rank` (-1: the
// file's), "duplicate JSON key \"k\" in PATH: the later value is used", and
// one more counting those beyond JsonDuplicates::kKept. Nothing when none.
void WarnDuplicateKeys(const JsonDuplicates& dups, int64_t rank, RecordSink* out);

}  // namespace hangdx::ingest
