#include "hangdx/model/history.h"

#include <algorithm>
#include <unordered_map>

namespace hangdx::model {
namespace {

// What makes two collectives of one dump the same variant. Interned values
// of one dump have one address per value, so addresses are the key.
struct VariantKey {
  const void* op;
  size_t op_size;
  const void *in, *out, *din, *dout, *backend;
  int32_t peer;
  bool operator==(const VariantKey&) const = default;
};

struct VariantHash {
  size_t operator()(const VariantKey& k) const {
    size_t h = std::hash<const void*>()(k.op) ^ k.op_size;
    for (const void* p : {k.in, k.out, k.din, k.dout, k.backend}) h = h * 1000003u ^ std::hash<const void*>()(p);
    return h ^ static_cast<size_t>(k.peer);
  }
};

}  // namespace

size_t OpHistory::ChoosePeriod(const std::vector<Packed>& items) {
  const size_t n = items.size();
  if (n < 16) return std::max<size_t>(n, 1);
  // Candidate periods: the distances from a few sample items to the next
  // items equal to them (a step's length, or a multiple of it).
  std::vector<size_t> candidates = {1};
  for (size_t s : {n / 4, n / 2, (3 * n) / 4}) {
    size_t found = 0;
    for (size_t j = s + 1; j < n && j < s + 4096 && found < 4; ++j)
      if (items[j] == items[s]) {
        candidates.push_back(j - s);
        ++found;
      }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  // Each candidate scored on up to 1,024 evenly spread items.
  size_t best = n, best_hits = 0;
  for (size_t p : candidates) {
    if (p * 2 > n) continue;
    size_t stride = std::max<size_t>(1, (n - p) / 1024), hits = 0, tries = 0;
    for (size_t i = p; i < n; i += stride, ++tries) hits += items[i] == items[i - p];
    // Worth it when at least half of the items repeat.
    if (hits * 2 >= tries && hits > best_hits) {
      best = p;
      best_hits = hits;
    }
  }
  return best;
}

OpHistory OpHistory::Build(const std::vector<OpRecord>& ops) {
  OpHistory h;
  h.entries_ = ops.size();
  std::unordered_map<VariantKey, uint16_t, VariantHash> variant_of;
  std::vector<std::vector<int64_t>> seqs;  // per pg: its collective seqs, for distinct_seqs
  std::vector<int64_t> last_seq;           // per pg: the previous collective's seq
  std::vector<Packed> items;
  items.reserve(ops.size());
  int pg = -1;
  std::string_view pg_name;
  int64_t prev_pos = 0, prev_rid = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpRecord& op = ops[i];
    h.last_activity_ns_ = std::max({h.last_activity_ns_, op.time_created_ns, op.time_completed_ns});
    // Consecutive ops mostly share the pg; names are interned (same address).
    if (pg < 0 || (pg_name.data() != op.pg_name.data() && pg_name != op.pg_name)) {
      pg = h.FindPg(op.pg_name);
      if (pg < 0) {
        pg = static_cast<int>(h.pgs_.size());
        h.pg_index_.Insert(op.pg_name, pg);
        h.pgs_.push_back({op.pg_name, op.pg_desc, {}, {}, 0, 0, -1, -1});
        seqs.emplace_back();
        last_seq.push_back(0);
      }
      pg_name = op.pg_name;
    }
    HistoryPg& p = h.pgs_[pg];
    ++p.ops;
    if (std::find(p.backends.begin(), p.backends.end(), op.backend) == p.backends.end())
      p.backends.push_back(op.backend);
    if (op.is_p2p || op.collective_seq < 0) continue;
    if (seqs[pg].empty()) p.coll_desc = op.pg_desc;
    seqs[pg].push_back(op.collective_seq);
    p.first_seq = p.first_seq < 0 ? op.collective_seq : std::min(p.first_seq, op.collective_seq);
    p.last_seq = std::max(p.last_seq, op.collective_seq);
    VariantKey key{op.op.data(),      op.op.size(),       &*op.input_sizes,  &*op.output_sizes,
                   &*op.input_dtypes, &*op.output_dtypes, op.backend.data(), op.p2p_peer_local};
    // Past 65,535 variants (never seen: a rank has a few dozen) the last
    // one stands for the rest.
    uint16_t next = static_cast<uint16_t>(std::min<size_t>(h.variants_.size(), UINT16_MAX - 1));
    auto [v, fresh] = variant_of.try_emplace(key, next);
    if (fresh && h.variants_.size() < UINT16_MAX) h.variants_.push_back(op);
    Packed pk;
    pk.dseq = op.collective_seq - last_seq[pg];
    pk.drid = op.record_id - prev_rid;
    pk.dpos = static_cast<uint32_t>(static_cast<int64_t>(i) - prev_pos);
    pk.pg = static_cast<uint16_t>(pg);
    pk.variant = v->second;
    pk.flags = (op.completed ? 1 : 0) | (op.retired ? 2 : 0);
    last_seq[pg] = op.collective_seq;
    prev_rid = op.record_id;
    prev_pos = static_cast<int64_t>(i);
    items.push_back(pk);
  }
  for (size_t k = 0; k < seqs.size(); ++k) {
    auto& v = seqs[k];
    if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
    h.pgs_[k].distinct_seqs = std::unique(v.begin(), v.end()) - v.begin();
  }
  h.collectives_ = items.size();
  if (items.empty()) return h;
  h.period_ = ChoosePeriod(items);
  h.base_.assign(items.begin(), items.begin() + std::min(h.period_, items.size()));
  for (size_t i = h.period_; i < items.size(); ++i)
    if (!(items[i] == items[i - h.period_])) h.exceptions_.emplace_back(static_cast<uint32_t>(i), items[i]);
  return h;
}

size_t OpHistory::MemoryBytes() const {
  size_t b = sizeof(*this) + pgs_.capacity() * sizeof(HistoryPg) + variants_.capacity() * sizeof(OpRecord) +
             base_.capacity() * sizeof(Packed) + exceptions_.capacity() * sizeof(exceptions_[0]);
  for (const auto& p : pgs_) b += p.backends.capacity() * sizeof(std::string_view);
  // The name index: its list, and past NameIndex::kLinear names about three words per hash node.
  b += pg_index_.entries().capacity() * sizeof(pg_index_.entries()[0]);
  if (pgs_.size() > NameIndex::kLinear) b += pgs_.size() * 5 * sizeof(void*);
  return b;
}

std::vector<std::shared_ptr<const OpHistory>> Histories(const Job& job) {
  std::vector<std::shared_ptr<const OpHistory>> out;
  out.reserve(job.dumps.size());
  for (const auto& d : job.dumps)
    out.push_back(d.history ? d.history : std::make_shared<const OpHistory>(OpHistory::Build(d.ops)));
  return out;
}

}  // namespace hangdx::model
