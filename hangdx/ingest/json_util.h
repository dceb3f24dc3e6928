// hangdx/ingest/json_util.h
// Pieces shared by the JSON input formats (Flight Recorder JSON, wait
// snapshots, device schedules and snapshots).
#pragma once

#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hangdx::ingest {

// Returns a JSON parser exception's message without nlohmann's
// "[json.exception...] " tag, for a diagnostic ("syntax error while parsing
// value - unexpected end of input"). Never fails.
std::string JsonWhy(const std::exception& e);

// Parses `data` as one JSON document into *doc. On failure returns false,
// with *error = "unreadable JSON at byte N: why" and *offset = N for a
// syntax error, or "unreadable JSON: why" and *offset = -1 for another
// failure (a number out of range: 1E400). Never throws.
bool ParseJson(std::string_view data, nlohmann::json* doc, std::string* error, int64_t* offset);

}  // namespace hangdx::ingest
