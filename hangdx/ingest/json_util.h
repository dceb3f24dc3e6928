// hangdx/ingest/json_util.h
// Pieces shared by the JSON input formats (Flight Recorder JSON, wait
// snapshots, device schedules and snapshots).
#pragma once

#include <exception>
#include <string>

namespace hangdx::ingest {

// Returns a JSON parser exception's message without nlohmann's
// "[json.exception...] " tag, for a diagnostic ("syntax error while parsing
// value - unexpected end of input"). Never fails.
std::string JsonWhy(const std::exception& e);

}  // namespace hangdx::ingest
