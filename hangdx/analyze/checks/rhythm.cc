#include "hangdx/analyze/checks/rhythm.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace hangdx::analyze {

namespace {

// The latest time any record of the job carries: "now" as the dumps see it.
int64_t LatestRecord(const model::Job& job) {
  int64_t t = 0;
  for (const auto& d : job.dumps)
    for (const auto& op : d.ops) t = std::max({t, op.time_created_ns, op.time_started_ns, op.time_completed_ns});
  return t;
}

std::string Seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

std::string Rhythm::Words() const {
  if (!Overdue()) return "";
  return "the ranks that arrived have waited at least " + Seconds(waited_ns) + ", " +
         std::to_string(waited_ns / step_ns) + " times the usual " + Seconds(step_ns) +
         " between two collectives of this pg";
}

Rhythm RhythmOf(const RankAnalysis& a, const Instance& in) {
  Rhythm r;
  const Group& g = a.groups[in.group];
  std::vector<int64_t> gaps;
  for (model::Rank x : in.arrived) {
    int m = g.MemberIndex(x);
    int64_t prev = 0;
    for (const auto& [seq, idx] : g.coll[m]) {
      if (seq >= in.seq) break;
      int64_t t = g.dump[m]->ops[idx].time_created_ns;
      if (t > 0 && prev > 0 && t > prev) gaps.push_back(t - prev);
      if (t > 0) prev = t;
    }
  }
  r.gaps = static_cast<int64_t>(gaps.size());
  if (gaps.size() >= 3) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    r.step_ns = gaps[gaps.size() / 2];
  }
  int64_t now = LatestRecord(a.job);
  if (in.created_ns > 0 && now > in.created_ns) r.waited_ns = now - in.created_ns;
  // A waiter's log may say how long it had waited (a timeout, a stall
  // warning): also a lower bound.
  for (model::Rank x : in.arrived)
    if (const model::RankDump* d = a.job.Find(x))
      for (const auto& e : d->events)
        if (e.waited_ms > 0 && e.kind != model::LogEvent::Kind::kProgress)
          r.waited_ns = std::max(r.waited_ns, e.waited_ms * 1'000'000);
  return r;
}

}  // namespace hangdx::analyze
