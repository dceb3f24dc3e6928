// hangdx/model/history.h
// OpHistory: every op one rank recorded, reduced to what the analyses read
// of the ops they do not look at one by one: for each collective its pg,
// seq, position, record id, completion and "variant" (op name, sizes,
// dtypes), per pg its name, description, backends and seq range, and per
// rank the op count and the last activity time. A rank's full records
// (RankDump::ops) can then be cut down to the few that a report shows
// (ingest/compact.h), while the history still answers for all of them.
//
// The collectives are stored as deltas (seq against the same pg's previous
// collective, position and record id against the previous collective), and
// a training loop repeats one step: the deltas repeat with the step's
// length. So the history keeps one period of them and the items that break
// the pattern (a changed size, the first pending op): its memory grows with
// what is irregular, not with how many entries the ring buffer held.
//
//   OpHistory h = OpHistory::Build(dump.ops);
//   h.ForEach([&](const HistoryItem& c) { ... h.pgs()[c.pg].name, c.seq ... });
//
// Immutable after Build; safe to share across threads. The string views and
// Refs it holds point into the interner of the dump whose ops built it.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hangdx/base/periodic_log.h"
#include "hangdx/model/job.h"
#include "hangdx/model/name_index.h"

namespace hangdx::model {

// One collective (a non-P2P op with a collective seq >= 0), decoded.
struct HistoryItem {
  int64_t seq = -1;
  int64_t record_id = -1;
  uint32_t pos = 0;      // index in the rank's recording order (RankDump::ops before any cut)
  uint16_t pg = 0;       // index into OpHistory::pgs()
  uint16_t variant = 0;  // index into OpHistory::variants()
  bool completed = false;
  bool retired = false;
};

// One pg a rank's ops name, in the order the pgs first appear.
struct HistoryPg {
  std::string_view name;
  std::string_view desc;                   // of the pg's first op
  std::string_view coll_desc;              // of its first collective ("" when none)
  std::vector<std::string_view> backends;  // distinct backends of its ops, in order seen
  size_t ops = 0;                          // ops of every kind
  size_t distinct_seqs = 0;                // distinct collective seqs
  int64_t first_seq = -1, last_seq = -1;   // lowest and highest collective seq, -1 when none
  // Every collective of the pg below this seq is completed (and retired),
  // whatever its recorded flags say: what a cross-rank pass learnt after
  // the history was built (ingest's DeriveNcclLogCompletion). INT64_MIN: none.
  int64_t completed_below = INT64_MIN;
};

class OpHistory {
 public:
  class Builder;

  OpHistory() = default;

  // The history of `ops` (one rank's records, in recording order, with
  // `completed` already derived). Runs in O(ops); never fails.
  static OpHistory Build(const std::vector<OpRecord>& ops);

  // Marks every collective of pg index `pg` below `seq` completed and
  // retired (HistoryPg::completed_below; a later call with a lower seq
  // does not lower it). For a copy being amended by a cross-rank pass.
  void MarkCompletedBelow(int pg, int64_t seq);

  // Calls f(const HistoryItem&) for each collective, in recording order.
  template <typename F>
  void ForEach(F f) const;

  // Every pg named by some op.
  const std::vector<HistoryPg>& pgs() const { return pgs_; }
  // The index of pg `name` in pgs(), -1 when no op names it. O(1): a
  // dump may record thousands of pgs and this runs once per op.
  int FindPg(std::string_view name) const { return pg_index_.Find(name); }
  // One record per distinct variant (op name, sizes, dtypes, P2P peer,
  // backend): the first collective that had it.
  const std::vector<OpRecord>& variants() const { return variants_; }
  // Ops of every kind the rank recorded.
  size_t entries() const { return entries_; }
  // Collectives (what ForEach visits).
  size_t collectives() const { return collectives_; }
  // The latest time_created_ns / time_completed_ns of any op, 0 when none.
  int64_t last_activity_ns() const { return last_activity_ns_; }
  // Bytes held (for the memory figures of docs/performance.md).
  size_t MemoryBytes() const;

 private:
  // A collective as stored: deltas against the previous collective (seq:
  // of the same pg), so that a repeated step repeats the same values.
  struct Packed {
    int64_t dseq = 0, drid = 0;
    uint32_t dpos = 0;
    uint16_t pg = 0, variant = 0;
    uint8_t flags = 0;  // 1: completed, 2: retired
    bool operator==(const Packed&) const = default;
  };
  friend class Builder;

  std::vector<HistoryPg> pgs_;
  NameIndex pg_index_;  // pg name -> index in pgs_
  std::vector<OpRecord> variants_;
  size_t entries_ = 0, collectives_ = 0;
  int64_t last_activity_ns_ = 0;
  PeriodicLog<Packed> items_;  // one per collective
};

// Builds an OpHistory one op at a time, in recording order, without
// holding the ops: memory grows with what is irregular (the history's
// exceptions, breaks in a pg's seq runs), not with the ops added, so a
// log's reader can stream millions of records through it.
//
//   OpHistory::Builder b;
//   for (const OpRecord& op : ops) b.Add(op);
//   OpHistory h = std::move(b).Finish();
//
// Gives the same history as OpHistory::Build on the same ops.
class OpHistory::Builder {
 public:
  // Adds the next op (its position is the count of ops added before it).
  // Returns the index of its pg in the history's pgs(). Its views and
  // Refs must outlive the history.
  int Add(const OpRecord& op);
  // Ops added so far.
  size_t size() const { return h_.entries_; }
  // The history of every op added. The builder is left empty.
  OpHistory Finish() &&;

 private:
  struct VariantKey {
    const void* op;
    size_t op_size;
    const void *in, *out, *din, *dout, *backend;
    int32_t peer;
    bool operator==(const VariantKey&) const = default;
  };
  struct VariantHash {
    size_t operator()(const VariantKey& k) const;
  };

  OpHistory h_;
  std::unordered_map<VariantKey, uint16_t, VariantHash> variant_of_;
  // Per pg: its collective seqs as runs [first, last] of seqs that rose by
  // at most one (for distinct_seqs), and the previous collective's seq.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs_;
  std::vector<int64_t> last_seq_;
  int pg_ = -1;
  std::string_view pg_name_;
  int64_t prev_pos_ = 0, prev_rid_ = 0;
};

// The history of every dump of `job` (index = dump index): its own
// (RankDump::history) where ingest made one, else built from its ops.
std::vector<std::shared_ptr<const OpHistory>> Histories(const Job& job);

template <typename F>
void OpHistory::ForEach(F f) const {
  std::vector<int64_t> last_seq(pgs_.size(), 0);
  HistoryItem it;
  int64_t pos = 0, rid = 0;
  items_.ForEach([&](const Packed& p) {
    pos += p.dpos;
    rid += p.drid;
    last_seq[p.pg] += p.dseq;
    it.seq = last_seq[p.pg];
    it.record_id = rid;
    it.pos = static_cast<uint32_t>(pos);
    it.pg = p.pg;
    it.variant = p.variant;
    bool below = it.seq < pgs_[p.pg].completed_below;
    it.completed = below || (p.flags & 1);
    it.retired = below || (p.flags & 2);
    f(static_cast<const HistoryItem&>(it));
  });
}

}  // namespace hangdx::model
