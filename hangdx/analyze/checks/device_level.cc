#include "hangdx/analyze/checks/device_level.h"

#include "hangdx/analyze/device_graph.h"

namespace hangdx::analyze {

void DeviceLevelCheck(const RankAnalysis& a, FindingSink* sink) {
  for (const auto& device : a.job.device) {
    DeviceAnalysis d = AnalyzeDevice(device);
    for (auto& f : d.findings) sink->Add(std::move(f));
    for (auto& e : d.edges) sink->device_edges.push_back(std::move(e));
    for (auto& r : d.ranks)
      if (!a.job.Find(r.rank)) sink->device_ranks.push_back(std::move(r));
  }
}

}  // namespace hangdx::analyze
