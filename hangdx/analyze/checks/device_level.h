// hangdx/analyze/checks/device_level.h
// The device-level check: runs the device-level engine (analyze/device_graph.h,
// AnalyzeDevice) on every device snapshot or schedule of the job (and HCCL
// plogs rebuilt into one) and adds its findings with scope kDevice, its
// rank-level witness edges and the summaries of device ranks that have no
// rank-level record to the sink. It does not look at rank-level findings:
// the two engines' findings meet only in passes/device_meets_rank.h.
#pragma once

#include "hangdx/analyze/checks/check.h"

namespace hangdx::analyze {

void DeviceLevelCheck(const RankAnalysis& a, FindingSink* sink);

}  // namespace hangdx::analyze
