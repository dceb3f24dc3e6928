#include "hangdx/analyze/instances.h"

#include <algorithm>

namespace hangdx::analyze {

InstanceTable BuildInstances(const GroupTable& groups, const AnalyzeOptions& options) {
  InstanceTable t;
  t.max_seq.assign(groups.size(), -1);
  t.mismatched_seqs.assign(groups.size(), 0);
  for (int gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    std::vector<int64_t> seqs;
    for (const auto& list : g.coll)
      for (const auto& [seq, idx] : list) seqs.push_back(seq);
    std::sort(seqs.begin(), seqs.end());
    seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
    std::map<std::string, int64_t> counts;  // the group's SignatureCounts, on first need
    for (int64_t seq : seqs) {
      std::optional<Instance> in = EvaluateInstance(groups, gi, seq, options, &counts);
      if (!in) continue;
      t.max_seq[gi] = std::max(t.max_seq[gi], seq);
      if (in->mismatch) ++t.mismatched_seqs[gi];
      // A healthy, finished seq needs no more attention.
      if (!in->problem() && !in->any_pending) continue;
      t.index[{gi, seq}] = static_cast<int>(t.list.size());
      t.list.push_back(std::move(*in));
    }
  }
  return t;
}

}  // namespace hangdx::analyze
