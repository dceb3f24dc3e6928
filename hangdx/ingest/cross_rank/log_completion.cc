#include "hangdx/ingest/cross_rank/log_completion.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "hangdx/model/history.h"

namespace hangdx::ingest {
namespace {

// Marks *op completed when it is a pending collective of a communicator
// every member got past (`passed_below`: pg -> the lowest of their last seqs).
void MarkNcclLogOpCompleted(model::OpRecord* op, const std::map<std::string, int64_t, std::less<>>& passed_below) {
  if (op->is_p2p || op->completed || op->state != model::OpState::kScheduled) return;
  auto p = passed_below.find(op->pg_name);
  if (p == passed_below.end() || op->collective_seq >= p->second) return;
  op->completed = op->retired = true;
  op->state = model::OpState::kCompleted;
}

}  // namespace

int64_t NcclLogCommSize(std::string_view desc) {
  constexpr std::string_view kPrefix = "NCCL communicator of ";
  if (desc.substr(0, kPrefix.size()) != kPrefix) return -1;
  desc.remove_prefix(kPrefix.size());
  int64_t n = 0;
  size_t i = 0;
  for (; i < desc.size() && desc[i] >= '0' && desc[i] <= '9' && i < 12; ++i) n = n * 10 + (desc[i] - '0');
  if (i == 0 || desc.substr(i, 6) != " ranks") return -1;
  return n;
}

void MatchAnonymousNcclComms(model::Job* job, model::DiagnosticSink* diags) {
  constexpr std::string_view kAnon = "nccl-comm:";
  auto anonymous = [&](std::string_view name) { return name.substr(0, kAnon.size()) == kAnon; };
  std::map<std::string, std::set<model::Rank>, std::less<>> who;  // pg -> ranks with ops in it
  std::map<std::string, int64_t, std::less<>> size;               // NCCL-log comm -> N
  for (const auto& d : job->dumps) {
    for (const auto& op : d.ops) who[std::string(op.pg_name)].insert(d.rank);
    for (const auto& [name, cfg] : d.pg_config) {
      int64_t n = NcclLogCommSize(cfg.desc);
      if (n > 0) size[name] = n;
    }
  }
  bool any_anon = false;
  for (const auto& [name, n] : size) any_anon = any_anon || anonymous(name);
  if (!any_anon) return;
  for (auto& d : job->dumps) {
    std::map<int64_t, std::vector<std::string>> anon, named;  // by N
    for (const auto& [name, n] : size) {
      auto w = who.find(name);
      if (w == who.end()) continue;
      if (anonymous(name) && w->second.size() == 1 && w->second.count(d.rank)) anon[n].push_back(name);
      if (!anonymous(name) && !w->second.count(d.rank) && !d.pg_config.count(name)) named[n].push_back(name);
    }
    for (const auto& [n, names] : anon) {
      auto c = named.find(n);
      if (names.size() == 1 && c != named.end() && c->second.size() == 1) {
        const std::string& from = names.front();
        const std::string& to = c->second.front();
        std::string_view to_sv = d.interner->Str(to);
        for (auto& op : d.ops)
          if (op.pg_name == from) op.pg_name = to_sv;
        auto node = d.pg_config.extract(from);
        node.key() = to;
        node.mapped().name = to;
        node.mapped().desc = "NCCL communicator of " + std::to_string(n) + " ranks";
        d.pg_config.insert(std::move(node));
        diags->Add(model::Diagnostic::Severity::kInfo, d.file,
                   "rank " + std::to_string(d.rank) + " logs ops of an NCCL communicator of " + std::to_string(n) +
                       " ranks with no Init line; taken as communicator " + to +
                       ", the only one of that size that the other ranks log and this rank does not",
                   d.rank);
        continue;
      }
      for (const auto& name : names) {
        // Its members are unknown too: the world list the parser gave it
        // would make the other ranks look absent from it.
        auto cfg = d.pg_config.find(name);
        if (cfg != d.pg_config.end()) {
          cfg->second.ranks = model::SharedRanks();
          cfg->second.ranks_known = false;
        }
        diags->Add(model::Diagnostic::Severity::kWarning, d.file,
                   "rank " + std::to_string(d.rank) + " logs ops of an NCCL communicator of " + std::to_string(n) +
                       " ranks with no Init line (pg " + name +
                       "), and no other rank logs it under that name: which communicator they belong to is unknown, "
                       "so findings about it may be wrong (collect the log from its start)",
                   d.rank);
      }
    }
  }
}

void DeriveNcclLogCompletion(model::Job* job) {
  // Per NCCL-log communicator: its size and each member's highest collective opCount.
  struct Comm {
    int64_t size = -1;
    std::map<model::Rank, int64_t> max_seq;
  };
  std::map<std::string, Comm, std::less<>> comms;
  for (const auto& d : job->dumps)
    for (const auto& [name, cfg] : d.pg_config) {
      int64_t n = NcclLogCommSize(cfg.desc);
      if (n > 0) comms[name].size = std::max(comms[name].size, n);
    }
  if (comms.empty()) return;
  auto note = [&](model::Rank rank, std::string_view pg, int64_t seq) {
    auto c = comms.find(pg);
    if (c == comms.end()) return;
    auto [it, fresh] = c->second.max_seq.try_emplace(rank, seq);
    if (!fresh) it->second = std::max(it->second, seq);
  };
  for (const auto& d : job->dumps) {
    if (d.history) {  // a cut dump: its history has every collective's pg and seq
      for (const model::HistoryPg& pg : d.history->pgs())
        if (pg.last_seq >= 0) note(d.rank, pg.name, pg.last_seq);
      continue;
    }
    for (const auto& op : d.ops)
      if (!op.is_p2p && op.collective_seq >= 0) note(d.rank, op.pg_name, op.collective_seq);
  }
  // An op below every member's highest opCount has been passed by all.
  std::map<std::string, int64_t, std::less<>> passed_below;
  for (const auto& [name, c] : comms) {
    if (c.size <= 0 || static_cast<int64_t>(c.max_seq.size()) != c.size) continue;
    int64_t low = INT64_MAX;
    for (const auto& [rank, seq] : c.max_seq) low = std::min(low, seq);
    passed_below[name] = low;
  }
  for (auto& d : job->dumps) {
    for (auto& op : d.ops) MarkNcclLogOpCompleted(&op, passed_below);
    if (!d.history) continue;
    // The records a cut left out: completed below the same seqs in the history.
    auto amended = std::make_shared<model::OpHistory>(*d.history);
    bool changed = false;
    for (size_t k = 0; k < amended->pgs().size(); ++k) {
      auto p = passed_below.find(amended->pgs()[k].name);
      if (p == passed_below.end() || amended->pgs()[k].completed_below >= p->second) continue;
      amended->MarkCompletedBelow(static_cast<int>(k), p->second);
      changed = true;
    }
    if (changed) d.history = std::move(amended);
  }
}

}  // namespace hangdx::ingest
