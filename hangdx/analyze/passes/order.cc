#include "hangdx/analyze/passes/order.h"

#include <algorithm>

namespace hangdx::analyze {

size_t FindingWeight(const Finding& f) {
  size_t arrived = 0;
  for (const auto& r : f.roles)
    if (r.role == "arrived") {
      arrived = r.ranks.size();
      break;
    }
  return f.blocked_behind.size() + arrived + f.cycle.size();
}

void OrderPass(const RankAnalysis&, FindingSink*, Diagnosis* out) {
  std::stable_sort(out->findings.begin(), out->findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return FindingWeight(a) > FindingWeight(b);
  });
}

}  // namespace hangdx::analyze
