// Fuzzes the device-level path end to end: the schedule / snapshot reader
// (ingest/formats/device_json/device_json.h), the device wait-for graph (analyze/device_graph.h)
// on what it read, and a small bounded simulation with fix search
// (sim/simulate.h), which must stop at its bound, never hang.
#include <cstdint>
#include <string>

#include "hangdx/analyze/device_graph.h"
#include "hangdx/ingest/formats/device_json/device_json.h"
#include "hangdx/sim/simulate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  hangdx::model::DiagnosticSink diags;
  hangdx::model::DeviceJob job;
  if (hangdx::ingest::SniffDeviceJson(text) <= 0) return 0;
  if (!hangdx::ingest::ReadDeviceJob(text, "fuzz", &job, &diags)) return 0;
  hangdx::analyze::AnalyzeDevice(job);
  hangdx::sim::SimulateOptions opt;
  opt.explore.max_states = 2000;
  opt.explore.max_seconds = 2;
  auto rep = hangdx::sim::Simulate(job, opt);
  if (rep.ok()) {
    hangdx::sim::RenderText(*rep);
    hangdx::sim::RenderJson(*rep);
  }
  return 0;
}
