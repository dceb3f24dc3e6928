#include "hangdx/ingest/json_util.h"

namespace hangdx::ingest {

std::string JsonWhy(const std::exception& e) {
  std::string what = e.what();
  size_t cut = what.find("] ");
  return cut == std::string::npos ? what : what.substr(cut + 2);
}

}  // namespace hangdx::ingest
