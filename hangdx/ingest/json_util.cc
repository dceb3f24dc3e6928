#include "hangdx/ingest/json_util.h"

namespace hangdx::ingest {

std::string JsonWhy(const std::exception& e) {
  std::string what = e.what();
  size_t cut = what.find("] ");
  return cut == std::string::npos ? what : what.substr(cut + 2);
}

bool ParseJson(std::string_view data, nlohmann::json* doc, std::string* error, int64_t* offset) {
  try {
    *doc = nlohmann::json::parse(data.begin(), data.end());
    return true;
  } catch (const nlohmann::json::parse_error& e) {
    *offset = static_cast<int64_t>(e.byte > 0 ? e.byte - 1 : 0);
    *error = "unreadable JSON at byte " + std::to_string(*offset) + ": " + JsonWhy(e);
  } catch (const nlohmann::json::exception& e) {
    *offset = -1;
    *error = "unreadable JSON: " + JsonWhy(e);
  }
  return false;
}

}  // namespace hangdx::ingest
