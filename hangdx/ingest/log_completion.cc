#include "hangdx/ingest/log_completion.h"

#include <algorithm>
#include <map>
#include <string>

namespace hangdx::ingest {

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
  for (const auto& d : job->dumps)
    for (const auto& op : d.ops) {
      if (op.is_p2p || op.collective_seq < 0) continue;
      auto c = comms.find(op.pg_name);
      if (c == comms.end()) continue;
      auto [it, fresh] = c->second.max_seq.try_emplace(d.rank, op.collective_seq);
      if (!fresh) it->second = std::max(it->second, op.collective_seq);
    }
  // An op below every member's highest opCount has been passed by all.
  std::map<std::string, int64_t, std::less<>> passed_below;
  for (const auto& [name, c] : comms) {
    if (c.size <= 0 || static_cast<int64_t>(c.max_seq.size()) != c.size) continue;
    int64_t low = INT64_MAX;
    for (const auto& [rank, seq] : c.max_seq) low = std::min(low, seq);
    passed_below[name] = low;
  }
  for (auto& d : job->dumps)
    for (auto& op : d.ops) {
      if (op.is_p2p || op.completed || op.state != model::OpState::kScheduled) continue;
      auto p = passed_below.find(op.pg_name);
      if (p == passed_below.end() || op.collective_seq >= p->second) continue;
      op.completed = op.retired = true;
      op.state = model::OpState::kCompleted;
    }
}

}  // namespace hangdx::ingest
