#include "hangdx/ingest/record_sink.h"

#include <algorithm>
#include <iterator>

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
  // Ranks mostly come in ascending order (a snapshot of every rank): a
  // rank above the last goes at the end with no search.
  auto at = dumps_.end();
  if (!dumps_.empty() && std::prev(at)->first >= rank) {
    at = dumps_.lower_bound(rank);
    if (at != dumps_.end() && at->first == rank) return at->second;
  }
  model::RankDump& d = dumps_.try_emplace(at, rank)->second;
  d.rank = rank;
  d.file = file_;
  return d;
}

void DumpBuilder::AddOp(model::Rank rank, const model::OpRecord& op) {
  model::RankDump& d = Dump(rank);
  if (!streams_.empty()) {
    auto s = streams_.find(rank);
    if (s != streams_.end()) return AddStreamed(&s->second, rank, op);
  }
  if (!fr_streams_.empty()) {
    auto s = fr_streams_.find(rank);
    if (s != fr_streams_.end()) return AddFr(&s->second, rank, op);
  }
  d.ops.push_back(op);
}

void DumpBuilder::StreamFlightRecorderOps(model::Rank rank) {
  if (!cut_.on || rank < -1 || rank >= model::kMaxRank || streams_.count(rank) || fr_streams_.count(rank) ||
      !Dump(rank).ops.empty())
    return;
  fr_streams_.try_emplace(rank);
}

void DumpBuilder::AddFr(FrStream* s, model::Rank rank, const model::OpRecord& op) {
  const uint32_t pos = s->pending_pos + static_cast<uint32_t>(s->pending.size());
  model::OpRecord& o = s->pending.emplace_back(op);
  // DeriveCompletion as far as this op and the ones before it tell: its
  // state (gloo: or retired), and it completes the pending ops of its pg.
  const bool gloo = o.backend == "gloo";
  o.completed = o.state == model::OpState::kCompleted || (gloo && o.retired);
  if (!gloo && o.completed && !s->open.empty()) {
    auto it = s->open.find(o.pg_name);
    if (it != s->open.end()) {
      for (uint32_t p : it->second) s->pending[p - s->pending_pos].completed = true;
      s->open.erase(it);
    }
  }
  if (!gloo && !o.completed) s->open[o.pg_name].push_back(pos);
  SettleFr(s, rank, false);
}

void DumpBuilder::SettleFr(FrStream* s, model::Rank rank, bool all) {
  const int64_t tail = std::max(0, cut_.fr_tail);
  while (!s->pending.empty() && (all || s->pending.front().completed || s->pending.front().backend == "gloo")) {
    const uint32_t pos = s->pending_pos++;
    model::OpRecord op = s->pending.front();
    s->pending.pop_front();
    const int pg = s->history.Add(op);
    if (static_cast<size_t>(pg) >= s->tail.size()) {
      s->tail.resize(pg + 1);
      s->last_seq.resize(pg + 1, -1);
    }
    bool keep = false;
    if (rank == cut_.keep_rank) {
      while (s->next_keep < cut_.keep.size() && cut_.keep[s->next_keep] < pos) ++s->next_keep;
      keep = s->next_keep < cut_.keep.size() && cut_.keep[s->next_keep] == pos;
    }
    s->last.emplace(pos, op);
    if (op.completed) s->last_completed.emplace(pos, op);
    const bool coll = !op.is_p2p && op.collective_seq >= 0;
    auto& t = s->tail[pg];
    if (coll && op.collective_seq > s->last_seq[pg]) {  // what fell out of the pg's highest seqs goes
      s->last_seq[pg] = op.collective_seq;
      const int64_t floor = s->last_seq[pg] - tail;
      t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& e) { return e.second.collective_seq <= floor; }),
              t.end());
    }
    // CompactDump's cut: what is not a collective, is not completed or is
    // read back, and the completed collectives among its pg's highest seqs.
    if (!coll || !op.completed || keep)
      s->held.emplace_back(pos, op);
    else if (op.collective_seq > s->last_seq[pg] - tail)
      t.emplace_back(pos, op);
  }
  if (s->pending.empty()) s->open.clear();
}

void DumpBuilder::EndFr(FrStream* s, model::RankDump* d) {
  DeriveCompletionOf(&s->pending, d->pg_status);  // the ops not settled: pg_status is known now
  SettleFr(s, d->rank, true);
  const size_t n = s->history.size();
  d->ops.clear();
  if (n == 0) return;  // as CompactDump: nothing to cut
  std::vector<std::pair<uint32_t, model::OpRecord>> kept = std::move(s->held);
  for (auto& t : s->tail)
    for (auto& e : t) kept.push_back(std::move(e));
  kept.push_back(*s->last);  // the rank's last op: where it is
  if (s->last_completed) kept.push_back(*s->last_completed);
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  d->ops.reserve(kept.size());
  d->op_pos.reserve(kept.size());
  for (auto& [pos, op] : kept) {
    if (!d->op_pos.empty() && d->op_pos.back() == pos) continue;
    d->ops.push_back(std::move(op));
    d->op_pos.push_back(pos);
  }
  d->history = std::make_shared<const model::OpHistory>(std::move(s->history).Finish());
}

void DumpBuilder::StreamOps(model::Rank rank) {
  // Ranks out of range keep nothing anyway; a rank already holding records
  // (another parser's) stays whole.
  if (!cut_.on || rank < -1 || rank >= model::kMaxRank || streams_.count(rank) || !Dump(rank).ops.empty()) return;
  streams_.try_emplace(rank);
}

void DumpBuilder::AddStreamed(Streamed* s, model::Rank rank, const model::OpRecord& op) {
  const uint32_t pos = static_cast<uint32_t>(s->history.size());
  const int pg = s->history.Add(op);
  if (static_cast<size_t>(pg) >= s->head.size()) {
    s->head.resize(pg + 1, 0);
    s->tail.resize(pg + 1);
  }
  bool keep = false;
  if (rank == cut_.keep_rank) {
    while (s->next_keep < cut_.keep.size() && cut_.keep[s->next_keep] < pos) ++s->next_keep;
    keep = s->next_keep < cut_.keep.size() && cut_.keep[s->next_keep] == pos;
  }
  if (op.is_p2p || op.collective_seq < 0 || s->head[pg] < cut_.head || keep) {
    if (!op.is_p2p && op.collective_seq >= 0 && !keep) ++s->head[pg];
    s->held.push_back(op);
    s->held_pos.push_back(pos);
    return;
  }
  auto& tail = s->tail[pg];
  if (cut_.tail == 0) return;
  if (tail.size() == cut_.tail) tail.pop_front();
  tail.emplace_back(pos, op);
}

void DumpBuilder::EndStream(Streamed* s, model::RankDump* d) {
  std::vector<std::pair<uint32_t, model::OpRecord>> tails;
  for (auto& t : s->tail)
    for (auto& e : t) tails.push_back(std::move(e));
  std::sort(tails.begin(), tails.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t n = s->history.size();
  d->ops.clear();
  d->ops.reserve(s->held.size() + tails.size());
  std::vector<uint32_t> pos;
  pos.reserve(d->ops.capacity());
  size_t k = 0;
  for (size_t i = 0; i < s->held.size(); ++i) {
    for (; k < tails.size() && tails[k].first < s->held_pos[i]; ++k) {
      d->ops.push_back(std::move(tails[k].second));
      pos.push_back(tails[k].first);
    }
    d->ops.push_back(std::move(s->held[i]));
    pos.push_back(s->held_pos[i]);
  }
  for (; k < tails.size(); ++k) {
    d->ops.push_back(std::move(tails[k].second));
    pos.push_back(tails[k].first);
  }
  if (d->ops.size() == n) return;  // every record held: the dump is whole
  d->op_pos = std::move(pos);
  d->history = std::make_shared<const model::OpHistory>(std::move(s->history).Finish());
}

size_t DumpBuilder::OpCount(model::Rank rank) const {
  if (!streams_.empty()) {
    auto s = streams_.find(rank);
    if (s != streams_.end()) return s->second.history.size();
  }
  if (!fr_streams_.empty()) {
    auto s = fr_streams_.find(rank);
    if (s != fr_streams_.end()) return s->second.history.size() + s->second.pending.size();
  }
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
  if (streams_.count(rank) || fr_streams_.count(rank)) return;
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
  r.dumps.reserve(dumps_.size());
  for (auto& [rank, d] : dumps_) {
    auto s = streams_.find(rank);
    if (s != streams_.end()) EndStream(&s->second, &d);
    auto fr = fr_streams_.find(rank);
    if (fr != fr_streams_.end())
      EndFr(&fr->second, &d);  // completion derived as it came
    else if (d.from_flight_recorder)
      DeriveCompletion(&d);
    r.dumps.push_back(std::move(d));
  }
  r.device = std::move(device_);
  r.unreadable_rank = unreadable_rank_;
  r.read = std::move(read_);
  r.read.file = file_;
  dumps_.clear();
  streams_.clear();
  fr_streams_.clear();
  device_.clear();
  unreadable_rank_ = -1;
  read_ = model::FileRead{};
  return r;
}

}  // namespace hangdx::ingest
