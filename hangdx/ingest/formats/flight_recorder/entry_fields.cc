#include "hangdx/ingest/formats/flight_recorder/entry_fields.h"

#include <unordered_map>

namespace hangdx::ingest::fr {

int FieldOf(std::string_view key) {
  static const std::unordered_map<std::string_view, int> kFields = [] {
    std::unordered_map<std::string_view, int> m;
    for (int i = 0; i < kFieldCount; ++i) m.emplace(kFieldNames[i], i);
    return m;
  }();
  auto it = kFields.find(key);
  return it == kFields.end() ? -1 : it->second;
}

}  // namespace hangdx::ingest::fr
