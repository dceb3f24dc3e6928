#include "hangdx/model/history.h"

#include <algorithm>
#include <unordered_map>

namespace hangdx::model {

size_t OpHistory::Builder::VariantHash::operator()(const VariantKey& k) const {
  size_t h = std::hash<const void*>()(k.op) ^ k.op_size;
  for (const void* p : {k.in, k.out, k.din, k.dout, k.backend}) h = h * 1000003u ^ std::hash<const void*>()(p);
  return h ^ static_cast<size_t>(k.peer);
}

int OpHistory::Builder::Add(const OpRecord& op) {
  OpHistory& h = h_;
  const int64_t i = static_cast<int64_t>(h.entries_++);
  h.last_activity_ns_ = std::max({h.last_activity_ns_, op.time_created_ns, op.time_completed_ns});
  // Consecutive ops mostly share the pg; names are interned (same address).
  if (pg_ < 0 || (pg_name_.data() != op.pg_name.data() && pg_name_ != op.pg_name)) {
    pg_ = h.FindPg(op.pg_name);
    if (pg_ < 0) {
      pg_ = static_cast<int>(h.pgs_.size());
      h.pg_index_.Insert(op.pg_name, pg_);
      h.pgs_.push_back({op.pg_name, op.pg_desc, {}, {}, 0, 0, -1, -1});
      runs_.emplace_back();
      last_seq_.push_back(0);
    }
    pg_name_ = op.pg_name;
  }
  const int pg = pg_;
  HistoryPg& p = h.pgs_[pg];
  ++p.ops;
  if (std::find(p.backends.begin(), p.backends.end(), op.backend) == p.backends.end()) p.backends.push_back(op.backend);
  if (op.is_p2p || op.collective_seq < 0) return pg;
  auto& runs = runs_[pg];
  if (runs.empty()) p.coll_desc = op.pg_desc;
  const int64_t seq = op.collective_seq;
  if (!runs.empty() && seq >= runs.back().first && seq <= runs.back().second) {
    // a seq already in the current run
  } else if (!runs.empty() && seq == runs.back().second + 1) {
    runs.back().second = seq;
  } else {
    runs.emplace_back(seq, seq);
  }
  p.first_seq = p.first_seq < 0 ? seq : std::min(p.first_seq, seq);
  p.last_seq = std::max(p.last_seq, seq);
  VariantKey key{op.op.data(),      op.op.size(),       &*op.input_sizes,  &*op.output_sizes,
                 &*op.input_dtypes, &*op.output_dtypes, op.backend.data(), op.p2p_peer_local};
  // Past 65,535 variants (never seen: a rank has a few dozen) the last
  // one stands for the rest.
  uint16_t next = static_cast<uint16_t>(std::min<size_t>(h.variants_.size(), UINT16_MAX - 1));
  auto [v, fresh] = variant_of_.try_emplace(key, next);
  if (fresh && h.variants_.size() < UINT16_MAX) h.variants_.push_back(op);
  Packed pk;
  pk.dseq = seq - last_seq_[pg];
  pk.drid = op.record_id - prev_rid_;
  pk.dpos = static_cast<uint32_t>(i - prev_pos_);
  pk.pg = static_cast<uint16_t>(pg);
  pk.variant = v->second;
  pk.flags = (op.completed ? 1 : 0) | (op.retired ? 2 : 0);
  last_seq_[pg] = seq;
  prev_rid_ = op.record_id;
  prev_pos_ = i;
  h.items_.Push(pk);
  return pg;
}

OpHistory OpHistory::Builder::Finish() && {
  OpHistory& h = h_;
  for (size_t k = 0; k < runs_.size(); ++k) {
    auto& v = runs_[k];
    std::sort(v.begin(), v.end());
    size_t distinct = 0;
    int64_t covered = INT64_MIN;  // highest seq counted so far
    for (const auto& [lo, hi] : v) {
      int64_t from = covered == INT64_MIN ? lo : std::max(lo, covered + 1);
      if (hi >= from) {
        distinct += static_cast<size_t>(hi - from) + 1;
        covered = hi;
      }
    }
    h.pgs_[k].distinct_seqs = distinct;
  }
  h.items_.Seal();
  h.collectives_ = h.items_.size();
  OpHistory out = std::move(h);
  *this = Builder();
  return out;
}

OpHistory OpHistory::Build(const std::vector<OpRecord>& ops) {
  Builder b;
  for (const OpRecord& op : ops) b.Add(op);
  return std::move(b).Finish();
}

void OpHistory::MarkCompletedBelow(int pg, int64_t seq) {
  HistoryPg& p = pgs_[pg];
  p.completed_below = std::max(p.completed_below, seq);
}

size_t OpHistory::MemoryBytes() const {
  size_t b = sizeof(*this) + pgs_.capacity() * sizeof(HistoryPg) + variants_.capacity() * sizeof(OpRecord) +
             items_.MemoryBytes() - sizeof(items_);
  for (const auto& p : pgs_) b += p.backends.capacity() * sizeof(std::string_view);
  // The name index: its list, and past NameIndex::kLinear names about three words per hash node.
  b += pg_index_.entries().capacity() * sizeof(pg_index_.entries()[0]);
  if (pgs_.size() > NameIndex::kLinear) b += pgs_.size() * 5 * sizeof(void*);
  return b;
}

std::vector<std::shared_ptr<const OpHistory>> Histories(const Job& job) {
  // The dumps with no ops (a wait snapshot's ranks: 100,000 of them) share
  // one empty history instead of each allocating its own.
  static const std::shared_ptr<const OpHistory> kEmpty = std::make_shared<const OpHistory>(OpHistory::Build({}));
  std::vector<std::shared_ptr<const OpHistory>> out;
  out.reserve(job.dumps.size());
  for (const auto& d : job.dumps)
    out.push_back(d.history       ? d.history
                  : d.ops.empty() ? kEmpty
                                  : std::make_shared<const OpHistory>(OpHistory::Build(d.ops)));
  return out;
}

}  // namespace hangdx::model
