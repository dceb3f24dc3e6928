// Fuzzes the pickle machine and the Flight Recorder converter on top of it:
// any input must give a dump or diagnostics, never a crash, hang or leak.
#include <cstdint>
#include <string>

#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"
#include "hangdx/ingest/formats/flight_recorder/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  hangdx::ingest::PickleDocument doc;
  hangdx::ingest::PickleError err;
  doc.Parse(bytes, &err);
  hangdx::model::RankDump dump;
  std::vector<hangdx::model::Diagnostic> diags;
  hangdx::ingest::ParseFlightRecorderPickle(bytes, "fuzz", &dump, &diags);
  return 0;
}
