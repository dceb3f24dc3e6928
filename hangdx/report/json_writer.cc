#include "hangdx/report/json_writer.h"

namespace hangdx::report {

std::string WriteJson(const nlohmann::ordered_json& doc) {
  return doc.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace hangdx::report
