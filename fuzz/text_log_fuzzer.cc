// Fuzzes the text-artifact parsers (NCCL logs, c10d messages, stack dumps,
// HCCL plogs, NCCL RAS reports) through their one entry point.
#include <cstdint>
#include <string>

#include "hangdx/ingest/text_logs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<hangdx::model::Diagnostic> diags;
  std::vector<hangdx::model::RankDump> dumps;
  hangdx::ingest::ParseTextArtifact(text, "fuzz", size % 4 == 0 ? -1 : 3, &dumps, &diags);
  return 0;
}
