#include "hangdx/analyze/world.h"

#include <algorithm>
#include <string>

#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

namespace {

// The world size the dumps record: a default pg config's member list. gloo
// keys its one pg_config entry '' and lists the world there while only the
// default pg exists (torch 2.13, testdata/torch/README.md). -1 when none.
int64_t RecordedWorldSize(const model::Job& job) {
  int64_t w = -1;
  for (const auto& d : job.dumps)
    for (const auto& [name, cfg] : d.pg_config)
      if ((name == "0" || name.empty() || cfg.desc == "default_pg") && cfg.ranks_known)
        w = std::max<int64_t>(w, cfg.ranks.back() + 1);
  return w;
}

// One more than the highest rank any input names (a dump, an unreadable
// file, a wait, a pg config).
int64_t HighestRankSeen(const model::Job& job) {
  int64_t seen = 0;
  for (const auto& [r, file] : job.unreadable) seen = std::max(seen, r + 1);
  for (const auto& d : job.dumps) {
    seen = std::max(seen, d.rank + 1);
    if (d.wait)
      for (model::Rank r : d.wait->waiting_for) seen = std::max(seen, r + 1);
    for (const auto& [name, cfg] : d.pg_config)
      if (!cfg.ranks.empty()) seen = std::max(seen, cfg.ranks.back() + 1);
  }
  return seen;
}

}  // namespace

World ResolveWorld(const model::Job& job, model::DiagnosticSink* diags) {
  World world;
  int64_t w = job.world_size;
  world.inferred = w < 0;
  if (w < 0) {
    w = RecordedWorldSize(job);
    if (w >= 0) world.inferred = false;
  }
  w = std::max(w, HighestRankSeen(job));
  // Rank numbers far above the number of ranks with data (a typo, a
  // hostile file) must not make a million-member default pg.
  int64_t with_data = static_cast<int64_t>(job.dumps.size() + job.unreadable.size());
  if (world.inferred && w > 4 * with_data + 64) {
    diags->Add(model::Diagnostic::Severity::kWarning, "",
               "rank numbers go up to " + std::to_string(w - 1) + " but only " +
                   Count(with_data, "rank has", "ranks have") +
                   " data; not guessing the world size (pass --world-size)");
    w = -1;
  }
  world.size = w;
  if (w < 0) {
    world.reported_size = static_cast<int64_t>(job.dumps.size());
    return world;
  }
  world.reported_size = w;
  size_t k = 0;
  for (model::Rank r = 0; r < w; ++r) {
    while (k < job.dumps.size() && job.dumps[k].rank < r) ++k;
    if (k >= job.dumps.size() || job.dumps[k].rank != r) world.without_dump.push_back(r);
  }
  return world;
}

bool Crashed(const model::Job& job, model::Rank r) {
  const model::RankDump* d = job.Find(r);
  if (!d) return false;
  for (const auto& e : d->events)
    if (e.kind == model::LogEvent::Kind::kCrash) return true;
  return false;
}

}  // namespace hangdx::analyze
