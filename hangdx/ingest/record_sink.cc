#include "hangdx/ingest/record_sink.h"

#include "hangdx/ingest/completion.h"

namespace hangdx::ingest {

void DumpBuilder::Diag(model::Diagnostic::Severity severity, std::string message, model::Rank rank, int64_t offset) {
  diags_->Add(severity, file_, std::move(message), rank, offset);
}

model::RankDump& DumpBuilder::Dump(model::Rank rank) {
  if (rank < -1 || rank >= model::kMaxRank) {
    // A garbled or hostile "[Rank 99999999999]": no job has that rank, and
    // the analysis allocates per rank up to the highest. Its records go to
    // a dump that is never returned; the containers callers can only append
    // to are emptied each time, so it stays as small as one record.
    if (!out_of_range_warned_)
      Diag(model::Diagnostic::Severity::kWarning,
           "rank " + std::to_string(rank) + " is out of range (0 to " + std::to_string(model::kMaxRank - 1) +
               "): what this file says of it (and of any other rank out of range) is dropped");
    out_of_range_warned_ = true;
    discard_.ops.clear();
    discard_.events.clear();
    discard_.stacks.clear();
    discard_.frames.clear();
    discard_.device_tasks.clear();
    return discard_;
  }
  auto [it, fresh] = dumps_.try_emplace(rank);
  if (fresh) {
    it->second.rank = rank;
    it->second.file = file_;
  }
  return it->second;
}

size_t DumpBuilder::OpCount(model::Rank rank) const {
  auto it = dumps_.find(rank);
  return it == dumps_.end() ? 0 : it->second.ops.size();
}

uint32_t DumpBuilder::AddFrame(model::Rank rank, model::Frame frame) {
  auto& frames = Dump(rank).frames;
  frames.push_back(std::move(frame));
  return static_cast<uint32_t>(frames.size() - 1);
}

model::PgConfig& DumpBuilder::PgConfig(model::Rank rank, const std::string& key) {
  auto [it, fresh] = Dump(rank).pg_config.try_emplace(key);
  if (fresh) it->second.name = key;
  return it->second;
}

void DumpBuilder::ReserveOps(model::Rank rank, size_t n) {
  auto& ops = Dump(rank).ops;
  ops.reserve(ops.size() + n);
}

const model::PgConfig* DumpBuilder::FindPgConfig(model::Rank rank, std::string_view key) const {
  auto d = dumps_.find(rank);
  if (d == dumps_.end()) return nullptr;
  auto it = d->second.pg_config.find(key);
  return it == d->second.pg_config.end() ? nullptr : &it->second;
}

DumpBuilder::Result DumpBuilder::Finish() {
  Result r;
  for (auto& [rank, d] : dumps_) {
    if (d.from_flight_recorder) DeriveCompletion(&d);
    r.dumps.push_back(std::move(d));
  }
  r.device = std::move(device_);
  r.unreadable_rank = unreadable_rank_;
  r.read = std::move(read_);
  r.read.file = file_;
  dumps_.clear();
  device_.clear();
  unreadable_rank_ = -1;
  read_ = model::FileRead{};
  return r;
}

}  // namespace hangdx::ingest
