#include "hangdx/ingest/text_logs.h"

namespace hangdx::ingest {

// Text formats are not read yet (issue 5): every text file is "unknown".
bool ParseTextArtifact(std::string_view, const std::string&, int64_t, std::vector<model::RankDump>*,
                       std::vector<model::Diagnostic>*) {
  return false;
}

}  // namespace hangdx::ingest
