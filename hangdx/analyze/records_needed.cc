#include "hangdx/analyze/records_needed.h"

#include <algorithm>
#include <climits>
#include <string>
#include <unordered_map>

#include "hangdx/analyze/groups.h"
#include "hangdx/analyze/world.h"
#include "hangdx/model/history.h"

namespace hangdx::analyze {
namespace {

// One (group, seq) folded over its members' records.
struct Acc {
  uint32_t variant = 0;      // 1 + job-wide id of the first record's variant; 0: no record yet
  bool needed = false;       // not plainly finished: every member's records are read
  bool log_pending = false;  // a log's record not known completed (only that)
};

// A group's seqs -> Acc: a vector over the seqs' range, or a hash map when
// the range is far wider than the records (seqs from a damaged dump).
class SeqTable {
 public:
  void Init(int64_t lo, int64_t hi, size_t records) {
    if (lo > hi) return;
    lo_ = lo;
    uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    dense_ = range <= 4 * records + 1024;
    if (dense_) acc_.resize(range);
  }
  Acc& At(int64_t seq) { return dense_ ? acc_[seq - lo_] : sparse_[seq]; }
  // The lowest seq in [from, below) whose Acc is `needed`, INT64_MAX when none.
  int64_t FirstNeeded(int64_t from, int64_t below) const {
    int64_t best = INT64_MAX;
    if (dense_) {
      for (int64_t s = std::max(from, lo_); s < below && static_cast<uint64_t>(s - lo_) < acc_.size(); ++s)
        if (acc_[s - lo_].needed) return s;
      return best;
    }
    for (const auto& [s, a] : sparse_)
      if (a.needed && s >= from && s < below) best = std::min(best, s);
    return best;
  }
  const Acc* Find(int64_t seq) const {
    if (dense_) return seq >= lo_ && static_cast<uint64_t>(seq - lo_) < acc_.size() ? &acc_[seq - lo_] : nullptr;
    auto it = sparse_.find(seq);
    return it == sparse_.end() ? nullptr : &it->second;
  }

 private:
  int64_t lo_ = 0;
  bool dense_ = false;
  std::vector<Acc> acc_;
  std::unordered_map<int64_t, Acc> sparse_;
};

// What SameOps (evaluate_instance.cc) compares first, as one key: two
// records with the same key match whatever else differs.
std::string VariantKey(const model::OpRecord& op) {
  std::string k(op.op);
  auto shapes = [&](const model::Shapes& s) {
    k += '|';
    for (const auto& shape : s) {
      k += '[';
      for (int64_t d : shape) k.append(reinterpret_cast<const char*>(&d), sizeof d);
    }
  };
  auto dtypes = [&](const model::Dtypes& d) {
    k += '|';
    for (const auto& t : d) k += t + ',';
  };
  shapes(op.input_sizes);
  shapes(op.output_sizes);
  dtypes(op.input_dtypes);
  dtypes(op.output_dtypes);
  k += '|' + std::to_string(op.p2p_peer_local);
  return k;
}

// Per dump: for each pg of its history, the group whose member it records
// it as (-1: unknown, or a pg whose members exclude the dump's rank).
std::vector<std::vector<int>> GroupsOfPgs(const model::Job& job, const GroupTable& groups) {
  std::vector<std::vector<int>> out(job.dumps.size());
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const model::RankDump& d = job.dumps[di];
    for (const model::HistoryPg& pg : groups.HistoryOf(d).pgs()) {
      int gi = groups.GroupOf(d, pg.name);
      out[di].push_back(gi >= 0 && groups[gi].MemberIndex(d.rank) >= 0 ? gi : -1);
    }
  }
  return out;
}

// Per group: the lowest last seq of a member with a dump (INT64_MIN when a
// member's dump records none of the group's collectives: it reached none),
// and the seq table sized to the group's seqs.
void LowestLastSeqs(const model::Job& job, const GroupTable& groups, const std::vector<std::vector<int>>& group_of,
                    std::vector<int64_t>* lowest, std::vector<SeqTable>* tables) {
  lowest->assign(groups.size(), INT64_MAX);
  std::vector<int64_t> lo(groups.size(), INT64_MAX), hi(groups.size(), INT64_MIN);
  std::vector<size_t> records(groups.size(), 0), members_seen(groups.size(), 0);
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const auto& pgs = groups.HistoryOf(job.dumps[di]).pgs();
    for (size_t p = 0; p < pgs.size(); ++p) {
      int gi = group_of[di][p];
      if (gi < 0) continue;
      ++members_seen[gi];
      if (pgs[p].first_seq < 0) {
        (*lowest)[gi] = INT64_MIN;
        continue;
      }
      (*lowest)[gi] = std::min((*lowest)[gi], pgs[p].last_seq);
      lo[gi] = std::min(lo[gi], pgs[p].first_seq);
      hi[gi] = std::max(hi[gi], pgs[p].last_seq);
      records[gi] += pgs[p].distinct_seqs;
    }
  }
  tables->resize(groups.size());
  for (int gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    // A member with a dump that records the group under no pg of its own.
    size_t with_dump = 0;
    for (const model::RankDump* d : g.dump) with_dump += d != nullptr;
    if (with_dump > members_seen[gi]) (*lowest)[gi] = INT64_MIN;
    (*tables)[gi].Init(lo[gi], hi[gi], records[gi]);
  }
}

}  // namespace

std::vector<std::vector<uint32_t>> RecordsNeeded(const model::Job& job) {
  std::vector<std::vector<uint32_t>> out(job.dumps.size());
  if (std::none_of(job.dumps.begin(), job.dumps.end(), [](const auto& d) { return d.history != nullptr; })) return out;
  model::DiagnosticSink ignored;  // the analysis reports them
  World world = ResolveWorld(job, &ignored);
  GroupTable groups = GroupTable::Resolve(job, world, &ignored, model::Histories(job));
  std::vector<std::vector<int>> group_of = GroupsOfPgs(job, groups);
  std::vector<int64_t> lowest;
  std::vector<SeqTable> tables;
  LowestLastSeqs(job, groups, group_of, &lowest, &tables);
  // Pass 1: fold every member's collectives into its (group, seq).
  std::unordered_map<std::string, uint32_t> variant_ids;
  std::vector<int64_t> first_pending(groups.size(), INT64_MAX);
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const model::OpHistory& h = groups.HistoryOf(job.dumps[di]);
    std::vector<uint32_t> ids;
    for (const auto& v : h.variants())
      ids.push_back(variant_ids.emplace(VariantKey(v), static_cast<uint32_t>(variant_ids.size())).first->second + 1);
    std::vector<int64_t> max_seq(h.pgs().size(), INT64_MIN);
    const bool fr = job.dumps[di].from_flight_recorder;
    h.ForEach([&](const model::HistoryItem& c) {
      int gi = group_of[di][c.pg];
      if (gi < 0) return;
      Acc& a = tables[gi].At(c.seq);
      // A second record of a seq (coalesced ops), or seqs out of order.
      if (c.seq <= max_seq[c.pg]) a.needed = true;
      max_seq[c.pg] = std::max(max_seq[c.pg], c.seq);
      // A log shows when an op was enqueued, not when it finished: with some
      // member's log missing, none of its ops is known completed.
      if (!c.completed) {
        (fr ? a.needed : a.log_pending) = true;
        first_pending[gi] = std::min(first_pending[gi], c.seq);
      }
      if (a.variant == 0)
        a.variant = ids[c.variant];
      else if (a.variant != ids[c.variant])
        a.needed = true;
    });
  }
  // The seqs of logs' ops that every member got past, agreeing, but that
  // none is known to have completed (a partial view: some member's log is
  // missing) are pending instances, and the analysis reads only the
  // first: where the pg's summary says it is stuck. Those after a problem
  // are read (the analysis chains them behind it).
  std::vector<int64_t> first_needed(groups.size(), INT64_MAX);
  for (int gi = 0; gi < groups.size(); ++gi)
    if (first_pending[gi] < lowest[gi]) first_needed[gi] = tables[gi].FirstNeeded(first_pending[gi], lowest[gi]);
  auto needed = [&](int gi, int64_t seq, const Acc* a) {
    if (seq >= lowest[gi]) return true;
    if (!a) return false;
    if (a->needed) return true;
    return a->log_pending && (seq == first_pending[gi] || seq > first_needed[gi]);
  };
  // Pass 2: the records of needed instances that cut dumps do not hold.
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    const model::RankDump& d = job.dumps[di];
    if (!d.history) continue;
    size_t k = 0;
    int64_t last_completed = -1;  // position of the last completed collective
    d.history->ForEach([&](const model::HistoryItem& c) {
      if (c.completed) last_completed = c.pos;
      int gi = group_of[di][c.pg];
      if (gi < 0) return;
      const Acc* a = tables[gi].Find(c.seq);
      if (!needed(gi, c.seq, a)) return;
      while (k < d.op_pos.size() && d.op_pos[k] < c.pos) ++k;
      if (k < d.op_pos.size() && d.op_pos[k] == c.pos) return;  // held
      out[di].push_back(c.pos);
    });
    // The rank's last completed op, which its summary names: a cut keeps a
    // Flight Recorder dump's, but a log's ops are known completed only after
    // the cut (ingest's DeriveNcclLogCompletion).
    int64_t held_completed = -1;
    for (size_t i = d.ops.size(); i-- > 0;)
      if (d.ops[i].completed) {
        held_completed = d.op_pos[i];
        break;
      }
    if (last_completed > held_completed) out[di].push_back(static_cast<uint32_t>(last_completed));
    std::sort(out[di].begin(), out[di].end());
    out[di].erase(std::unique(out[di].begin(), out[di].end()), out[di].end());
  }
  return out;
}

}  // namespace hangdx::analyze
