#include "hangdx/analyze/groups.h"

#include <set>

#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::OpRecord;
using model::RankDump;

GroupTable GroupTable::Resolve(const model::Job& job, const World& world, model::DiagnosticSink* diags,
                               std::vector<std::shared_ptr<const model::OpHistory>> histories) {
  GroupTable t;
  t.dumps_ = job.dumps.data();
  t.histories_ = histories.size() == job.dumps.size() ? std::move(histories) : model::Histories(job);
  t.per_dump_.resize(job.dumps.size());
  std::map<std::string, std::set<model::Rank>> inferred;  // name -> recording ranks
  std::map<std::string, std::string> inferred_desc;
  std::map<std::string, int64_t> inferred_size;  // name -> the largest size a record gives
  std::vector<std::vector<std::pair<std::string_view, std::string_view>>> pending(job.dumps.size());
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const RankDump& d = job.dumps[di];
    // Each pg name the dump records, once, with the description of its first op.
    for (const model::HistoryPg& pg : t.histories_[di]->pgs()) {
      std::string_view name = pg.name, op_desc = pg.desc;
      std::string desc(op_desc);
      auto cfg = d.pg_config.find(name);
      if (cfg != d.pg_config.end() && cfg->second.ranks_known) {
        if (desc.empty()) desc = cfg->second.desc;
        t.per_dump_[di].Insert(name, t.Intern(std::string(name), desc, cfg->second.ranks, false));
      } else if ((name == "0" || desc == "default_pg") && world.size >= 0) {
        t.per_dump_[di].Insert(name, t.Intern(std::string(name), desc, t.WorldRanks(world.size), world.inferred));
      } else {
        inferred[std::string(name)].insert(d.rank);
        inferred_desc[std::string(name)] = desc;
        if (cfg != d.pg_config.end() && cfg->second.size > 0) {
          int64_t& n = inferred_size[std::string(name)];
          n = std::max(n, cfg->second.size);
        }
        pending[di].emplace_back(name, op_desc);
      }
    }
  }
  // Members inferred from which ranks record the pg.
  std::map<std::string, int> inferred_group;
  for (const auto& [name, ranks] : inferred) {
    auto n = inferred_size.find(name);
    // A pg as large as the world (a timeout's NumelOut / NumelIn) has every
    // rank as a member, so the members that left no record are named, not
    // only counted. Not an NCCL log's communicator seen without its Init
    // line ("nccl-comm:..."): the other ranks may log it under its commId,
    // so a rank without ops in it is not shown to be absent from it.
    if (n != inferred_size.end() && world.size > 0 && n->second == world.size && name.rfind("nccl-comm:", 0) != 0 &&
        static_cast<int64_t>(ranks.size()) < world.size) {
      int gi = t.Intern(name, inferred_desc[name], t.WorldRanks(world.size), world.inferred);
      inferred_group[name] = gi;
      continue;
    }
    int gi = t.Intern(name, inferred_desc[name],
                      model::SharedRanks(std::vector<model::Rank>(ranks.begin(), ranks.end())), true);
    if (n != inferred_size.end()) t.groups_[gi].size = std::max<int64_t>(n->second, ranks.size());
    inferred_group[name] = gi;
  }
  for (size_t di = 0; di < job.dumps.size(); ++di)
    for (const auto& [name, desc] : pending[di]) t.per_dump_[di].Insert(name, inferred_group[std::string(name)]);
  t.IndexOps(job, diags);
  return t;
}

// Indexes each member's ops: collectives by seq, P2P ops in order.
void GroupTable::IndexOps(const model::Job& job, model::DiagnosticSink* diags) {
  for (auto& g : groups_) {
    g.dump.assign(g.members.size(), nullptr);
    g.coll.resize(g.members.size());
    g.p2p.resize(g.members.size());
  }
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const RankDump& d = job.dumps[di];
    // Ops of a pg whose members exclude the dump's rank: one warning per op
    // recorded (counted by the sink), kept or not.
    for (const model::HistoryPg& pg : histories_[di]->pgs()) {
      int gi = GroupOf(d, pg.name);
      if (gi < 0 || groups_[gi].MemberIndex(d.rank) >= 0) continue;
      for (size_t k = 0; k < pg.ops; ++k)
        diags->Add(model::Diagnostic::Severity::kWarning, d.file,
                   "records pg " + std::string(pg.name) + " whose recorded members (" +
                       FormatRanks(groups_[gi].members) + ") do not include this rank",
                   d.rank);
    }
    for (uint32_t i = 0; i < d.ops.size(); ++i) {
      const OpRecord& op = d.ops[i];
      int gi = GroupOf(d, op.pg_name);
      if (gi < 0) continue;
      Group& g = groups_[gi];
      int m = g.MemberIndex(d.rank);
      if (m < 0) continue;
      g.dump[m] = &d;
      if (op.is_p2p)
        g.p2p[m].push_back(i);
      else if (op.collective_seq >= 0)
        g.coll[m].emplace_back(op.collective_seq, i);
    }
  }
  for (auto& g : groups_) {
    for (size_t m = 0; m < g.members.size(); ++m) {
      if (!g.dump[m]) g.dump[m] = job.Find(g.members[m]);
      std::stable_sort(g.coll[m].begin(), g.coll[m].end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
}

int GroupTable::GroupOf(const RankDump& d, std::string_view name) const { return per_dump_[&d - dumps_].Find(name); }

bool GroupTable::InNoSubGroup(const RankDump& d, int64_t world_size) const {
  auto cfg = d.pg_config.find("");
  if (world_size <= 0 || cfg == d.pg_config.end() || !cfg->second.ranks_known) return false;
  const model::SharedRanks& ranks = cfg->second.ranks;
  // Sorted and distinct: the world is 0 .. world_size - 1 exactly when the
  // ends and the count say so.
  if (static_cast<int64_t>(ranks.size()) != world_size || *ranks.begin() != 0 || ranks.back() != world_size - 1)
    return false;
  for (const model::HistoryPg& pg : HistoryOf(d).pgs())
    if (pg.name != "0" && pg.desc != "default_pg") return false;
  return true;
}

const model::SharedRanks& GroupTable::WorldRanks(int64_t size) {
  if (world_ranks_.size() != static_cast<size_t>(size)) {
    std::vector<model::Rank> all(static_cast<size_t>(size));
    for (model::Rank r = 0; r < size; ++r) all[r] = r;
    world_ranks_ = model::SharedRanks(std::move(all));
  }
  return world_ranks_;
}

int GroupTable::Intern(const std::string& name, const std::string& desc, const model::SharedRanks& members,
                       bool inferred) {
  auto key = std::make_pair(name, &members.get());
  if (auto known = interned_.find(key); known != interned_.end()) return known->second;
  interned_lists_.push_back(members);
  auto& candidates = by_name_[name];
  for (int gi : candidates)
    if (groups_[gi].member_list == members) return interned_[key] = gi;
  Group g;
  g.name = name;
  g.desc = desc;
  g.member_list = members;
  g.members = members.get();
  g.inferred = inferred;
  g.size = static_cast<int64_t>(g.members.size());
  groups_.push_back(std::move(g));
  candidates.push_back(static_cast<int>(groups_.size()) - 1);
  return interned_[key] = candidates.back();
}

bool UserDescription(const std::string& desc) {
  return !desc.empty() && desc != "undefined" && desc != "default_pg" && desc.rfind("NCCL communicator", 0) != 0 &&
         desc.rfind("HCCL group", 0) != 0;
}

}  // namespace hangdx::analyze
