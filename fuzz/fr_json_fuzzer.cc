// Fuzzes the JSON readers: Flight Recorder JSON dumps, wait snapshots, and
// format sniffing.
#include <cstdint>
#include <string>

#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"
#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"
#include "hangdx/ingest/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<hangdx::model::Diagnostic> diags;
  hangdx::model::RankDump dump;
  hangdx::ingest::ParseFlightRecorderJson(text, "fuzz", &dump, &diags);
  std::vector<hangdx::model::RankDump> ranks;
  hangdx::ingest::ParseWaitSnapshot(text, "fuzz", &ranks, &diags);
  hangdx::ingest::SniffFormat(text);
  return 0;
}
