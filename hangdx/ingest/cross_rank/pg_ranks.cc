#include "hangdx/ingest/cross_rank/pg_ranks.h"

#include <algorithm>
#include <set>

#include "hangdx/ingest/cross_rank/log_completion.h"

namespace hangdx::ingest {
namespace {

// The pg's size where its description says it: an NCCL log communicator
// ("NCCL communicator of N ranks") or an HCCL group ("(rankSize N)").
int64_t PgSize(std::string_view desc) {
  int64_t n = NcclLogCommSize(desc);
  if (n > 0) return n;
  size_t p = desc.find("(rankSize ");
  if (p == std::string_view::npos) return -1;
  n = 0;
  size_t i = p + 10, digits = 0;
  for (; i < desc.size() && desc[i] >= '0' && desc[i] <= '9' && digits < 12; ++i, ++digits)
    n = n * 10 + (desc[i] - '0');
  return digits > 0 && i < desc.size() && desc[i] == ')' ? n : -1;
}

}  // namespace

std::map<std::string, std::map<int64_t, model::Rank>> PgLocalRankMap(const model::Job& job,
                                                                     model::DiagnosticSink* diags) {
  std::map<std::string, std::map<int64_t, model::Rank>> map;
  std::set<std::pair<std::string, int64_t>> clash;
  for (const auto& d : job.dumps)
    for (const auto& [name, cfg] : d.pg_config) {
      if (cfg.self_local < 0) continue;
      auto [it, fresh] = map[name].try_emplace(cfg.self_local, d.rank);
      if (fresh || it->second == d.rank || !clash.emplace(name, cfg.self_local).second) continue;
      if (diags)
        diags->Add(model::Diagnostic::Severity::kWarning, d.file,
                   "ranks " + std::to_string(it->second) + " and " + std::to_string(d.rank) +
                       " both say they are rank " + std::to_string(cfg.self_local) + " of pg " + name +
                       "; not mapping that rank",
                   d.rank);
    }
  for (const auto& [name, local] : clash) map[name].erase(local);
  return map;
}

void MapPgLocalRanks(model::Job* job, model::DiagnosticSink* diags) {
  auto map = PgLocalRankMap(*job, diags);
  // The world group needs no evidence: a rank inside it is the global rank.
  for (const auto& d : job->dumps)
    if (d.wait && d.wait->pg_local && IsHcclWorldGroup(d.wait->pg))
      for (model::Rank local : d.wait->waiting_for) map[d.wait->pg].try_emplace(local, local);
  if (map.empty()) return;
  auto file_of = [&](model::Rank r) {
    const model::RankDump* d = job->Find(r);
    return d ? d->file : std::string();
  };
  for (auto& d : job->dumps) {
    if (!d.wait || !d.wait->pg_local) continue;
    auto pg = map.find(d.wait->pg);
    if (pg == map.end()) continue;
    std::vector<model::Rank> global;
    std::string how;
    for (model::Rank local : d.wait->waiting_for) {
      auto it = pg->second.find(local);
      if (it == pg->second.end()) break;
      global.push_back(it->second);
      how += (how.empty() ? "" : "; ") + std::string("rank ") + std::to_string(local) + " of pg " + d.wait->pg +
             " is global rank " + std::to_string(it->second) + " (" +
             (IsHcclWorldGroup(d.wait->pg) ? std::string("the world group") : file_of(it->second)) + ")";
    }
    if (global.size() != d.wait->waiting_for.size()) continue;
    d.wait->waiting_for = std::move(global);
    d.wait->pg_local = false;
    diags->Add(model::Diagnostic::Severity::kInfo, d.file,
               "the wait of rank " + std::to_string(d.rank) + " named pg-local ranks: " + how, d.rank);
  }
  // Members of pgs of known size whose local ranks are all mapped.
  for (const auto& [name, locals] : map) {
    int64_t size = -1;
    for (const auto& d : job->dumps) {
      auto cfg = d.pg_config.find(name);
      if (cfg != d.pg_config.end()) size = std::max(size, PgSize(cfg->second.desc));
    }
    if (size <= 0 || static_cast<int64_t>(locals.size()) != size || locals.rbegin()->first != size - 1) continue;
    std::vector<model::Rank> members;
    for (const auto& [local, global] : locals) members.push_back(global);
    std::sort(members.begin(), members.end());
    if (std::adjacent_find(members.begin(), members.end()) != members.end()) continue;  // one rank twice
    model::SharedRanks shared(std::move(members));
    for (auto& d : job->dumps) {
      auto cfg = d.pg_config.find(name);
      if (cfg == d.pg_config.end()) continue;
      cfg->second.ranks = shared;
      cfg->second.ranks_known = true;
    }
  }
}

}  // namespace hangdx::ingest
