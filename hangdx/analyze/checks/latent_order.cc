#include "hangdx/analyze/checks/latent_order.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hangdx/base/periodic_log.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {
namespace {

using model::OpRecord;
using model::RankDump;

// One collective of a pg on one rank: the first record of its seq.
struct Coll {
  int64_t seq;
  uint32_t pos;  // recording position: orders the rank's pgs against each other
  int64_t record_id;
  uint16_t variant;  // names the op: OpHistory::variants
};

// One rank's collectives, per history pg (OpHistory::pgs() index), by
// seq, first record of each seq. It grows with the rank's entries, so it
// is made for one dump at a time and dropped (CollectivesOf's callers):
// every rank's at once was most of the peak RSS of a job with many
// entries (168 MB at 256 ranks x 20,000 entries).
using Collectives = std::vector<std::vector<Coll>>;

// One pg of one rank, what the pairing needs: no collectives, so that
// every rank's can be held at once.
struct PgSum {
  std::string_view name, desc, backend;  // desc of its first collective, backend of its op
  int id = -1;                           // job-wide id of `name`
  int hpg = -1;                          // index into the history's pgs()
  int64_t lo = -1, hi = -1;              // lowest and highest collective seq
  size_t seqs = 0;                       // distinct collective seqs
};

// Pairs of pgs looked at per rank; a rank in more pgs than this compares the
// ones with the most collectives (pg pairs grow quadratically).
constexpr size_t kMaxPgsPerRank = 64;

// The collectives of history `h` per pg (see Collectives).
Collectives CollectivesOf(const model::OpHistory& h) {
  Collectives out(h.pgs().size());
  h.ForEach([&](const model::HistoryItem& c) { out[c.pg].push_back({c.seq, c.pos, c.record_id, c.variant}); });
  for (auto& p : out) {
    std::stable_sort(p.begin(), p.end(), [](const Coll& a, const Coll& b) { return a.seq < b.seq; });
    p.erase(std::unique(p.begin(), p.end(), [](const Coll& a, const Coll& b) { return a.seq == b.seq; }), p.end());
  }
  return out;
}

// A rank's pgs with collectives, in the order of their first collective,
// at most kMaxPgsPerRank of them (those with the most distinct seqs). The
// seq range and count are the history's (HistoryPg: over the same
// collectives), so this reads the history once and keeps nothing per op.
std::vector<PgSum> PgsOf(const model::OpHistory& h) {
  std::vector<PgSum> out;
  std::vector<char> seen(h.pgs().size(), 0);
  h.ForEach([&](const model::HistoryItem& c) {
    if (seen[c.pg]) return;
    seen[c.pg] = 1;
    const model::HistoryPg& pg = h.pgs()[c.pg];
    out.push_back({pg.name, pg.coll_desc, h.variants()[c.variant].backend, -1, c.pg, pg.first_seq, pg.last_seq,
                   pg.distinct_seqs});
  });
  if (out.size() > kMaxPgsPerRank) {
    std::stable_sort(out.begin(), out.end(), [](const PgSum& a, const PgSum& b) { return a.seqs > b.seqs; });
    out.resize(kMaxPgsPerRank);
  }
  return out;
}

// `list` sorted by id.
const PgSum* FindPg(const std::vector<PgSum>& list, int id) {
  auto it = std::lower_bound(list.begin(), list.end(), id, [](const PgSum& p, int i) { return p.id < i; });
  return it != list.end() && it->id == id ? &*it : nullptr;
}

// The entries of `p` (by seq) with seq in [lo, hi].
std::span<const Coll> Window(const std::vector<Coll>& p, int64_t lo, int64_t hi) {
  auto b = std::lower_bound(p.begin(), p.end(), lo, [](const Coll& c, int64_t s) { return c.seq < s; });
  auto e = std::upper_bound(p.begin(), p.end(), hi, [](int64_t s, const Coll& c) { return s < c.seq; });
  return {p.data() + (b - p.begin()), static_cast<size_t>(e - b)};
}

// One rank's order of pg P against pg Q: for each P collective in the
// window, how many of Q's collectives in the window it issued before it.
struct Order {
  std::vector<int64_t> p_seqs;
  std::vector<int32_t> q_before;
  bool operator==(const Order& o) const { return p_seqs == o.p_seqs && q_before == o.q_before; }
};

// Fills *o with one rank's order; `qpos` is scratch (no allocation per call
// once warm).
void OrderOf(std::span<const Coll> pw, std::span<const Coll> qw, std::vector<uint32_t>* qpos, Order* o) {
  qpos->clear();
  for (const Coll& c : qw) qpos->push_back(c.pos);
  std::sort(qpos->begin(), qpos->end());
  o->p_seqs.clear();
  o->q_before.clear();
  for (const Coll& c : pw) {
    o->p_seqs.push_back(c.seq);
    o->q_before.push_back(static_cast<int32_t>(std::lower_bound(qpos->begin(), qpos->end(), c.pos) - qpos->begin()));
  }
}

// An Order kept while every rank's is compared with it: as deltas (seq
// against the previous P seq, Q count against the previous), which a
// training loop repeats, in a PeriodicLog, so that it costs what is
// irregular in it, not the window's length. Lossless: Equals and Get
// compare and give back the exact Order.
class OrderLog {
 public:
  explicit OrderLog(const Order& o) : size_(o.p_seqs.size()), hash_(Hash(o)) {
    int64_t seq = 0, q = 0;
    for (size_t i = 0; i < size_; ++i) {
      log_.Push({o.p_seqs[i] - seq, o.q_before[i] - q});
      seq = o.p_seqs[i];
      q = o.q_before[i];
    }
    log_.Seal();
  }
  bool Equals(const Order& o, uint64_t hash) const {
    if (hash != hash_ || o.p_seqs.size() != size_) return false;
    bool same = true;
    size_t i = 0;
    int64_t seq = 0, q = 0;
    log_.ForEach([&](const Step& s) {
      seq += s.dseq;
      q += s.dq;
      same = same && o.p_seqs[i] == seq && o.q_before[i] == q;
      ++i;
    });
    return same;
  }
  Order Get() const {
    Order o;
    o.p_seqs.reserve(size_);
    o.q_before.reserve(size_);
    int64_t seq = 0, q = 0;
    log_.ForEach([&](const Step& s) {
      o.p_seqs.push_back(seq += s.dseq);
      o.q_before.push_back(static_cast<int32_t>(q += s.dq));
    });
    return o;
  }
  // A fingerprint of `o`: orders that differ in it differ (equal ones are
  // then compared in full, so a collision costs time, never a wrong class).
  static uint64_t Hash(const Order& o) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ o.p_seqs.size();
    for (size_t i = 0; i < o.p_seqs.size(); ++i) {
      h = (h ^ static_cast<uint64_t>(o.p_seqs[i])) * 0x100000001b3ull;
      h = (h ^ static_cast<uint32_t>(o.q_before[i])) * 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 29);
  }

 private:
  struct Step {
    int64_t dseq = 0, dq = 0;
    bool operator==(const Step&) const = default;
  };
  PeriodicLog<Step> log_;
  size_t size_;
  uint64_t hash_;
};

// The ranks of one pair that issue its pgs in one order.
struct RankClass {
  Order order;
  std::vector<model::Rank> ranks;
  std::vector<const RankDump*> dumps;
};

// The same while the ranks are gathered: the order as an OrderLog.
struct LoggedClass {
  OrderLog order;
  std::vector<model::Rank> ranks;
  std::vector<const RankDump*> dumps;
};

std::string Label(std::string_view name, std::string_view desc) {
  bool show = !desc.empty() && desc != "undefined" && desc.size() <= 32;
  return "pg " + (name.empty() ? "''" : std::string(name)) + (show ? " (" + std::string(desc) + ")" : "");
}

// " issues " after one rank, " issue " after several.
const char* Verb(const std::vector<model::Rank>& ranks) { return ranks.size() == 1 ? " issues " : " issue "; }

// Every pair of pgs (same backend) that two or more ranks record, and each
// rank's pgs (PgSum: no collectives). Pg names get job-wide ids (views into
// the dumps' interners stay valid); every (pair of pg ids, dump) is one
// 16-byte row, sorted: no per-pair allocation, so 100,000 ranks x 28 pairs
// stay cheap.
struct PgPairs {
  struct Pair {
    std::string_view p, q;  // names, p < q
    int pid, qid;
    std::vector<size_t> dumps;  // the dumps that record both, in job order
  };
  std::vector<std::vector<PgSum>> per_dump;  // per dump, sorted by id
  std::vector<Pair> pairs;                   // in name order, so findings do not depend on input order
};

PgPairs FindPgPairs(const model::Job& job, const std::vector<std::shared_ptr<const model::OpHistory>>& histories) {
  PgPairs out;
  out.per_dump.reserve(job.dumps.size());
  std::unordered_map<std::string_view, int> ids;
  std::vector<std::string_view> id_name;
  std::vector<std::pair<uint64_t, uint32_t>> rows;
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    // A rank with collectives in one pg is in no pair.
    const auto& pgs = histories[di]->pgs();
    bool two = std::count_if(pgs.begin(), pgs.end(), [](const model::HistoryPg& pg) { return pg.first_seq >= 0; }) >= 2;
    out.per_dump.push_back(two ? PgsOf(*histories[di]) : std::vector<PgSum>());
    auto& list = out.per_dump.back();
    for (auto& p : list) {
      auto [it, fresh] = ids.emplace(p.name, static_cast<int>(id_name.size()));
      if (fresh) id_name.push_back(p.name);
      p.id = it->second;
    }
    std::sort(list.begin(), list.end(), [](const PgSum& a, const PgSum& b) { return a.id < b.id; });
    for (size_t a = 0; a < list.size(); ++a)
      for (size_t b = a + 1; b < list.size(); ++b)
        if (list[a].backend == list[b].backend)
          rows.emplace_back((static_cast<uint64_t>(list[a].id) << 32) | static_cast<uint32_t>(list[b].id),
                            static_cast<uint32_t>(di));
  }
  std::sort(rows.begin(), rows.end());
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].first == rows[i].first) ++j;
    if (j - i >= 2) {
      int a = static_cast<int>(rows[i].first >> 32), b = static_cast<int>(rows[i].first & 0xffffffffu);
      if (id_name[b] < id_name[a]) std::swap(a, b);
      PgPairs::Pair pair{id_name[a], id_name[b], a, b, {}};
      for (size_t k = i; k < j; ++k) pair.dumps.push_back(rows[k].second);
      out.pairs.push_back(std::move(pair));
    }
    i = j;
  }
  std::sort(out.pairs.begin(), out.pairs.end(),
            [](const PgPairs::Pair& x, const PgPairs::Pair& y) { return x.p != y.p ? x.p < y.p : x.q < y.q; });
  return out;
}

// The seqs of P and of Q that every rank of the pair still recorded.
struct Windows {
  int64_t plo = INT64_MIN, phi = INT64_MAX, qlo = INT64_MIN, qhi = INT64_MAX;
  bool empty() const { return plo > phi || qlo > qhi; }
};

// One pair of pgs as the check reads it: the job, each rank's pgs and the
// window. The collectives of the few ranks a finding quotes are read from
// their histories when it is written (Coll).
struct PairView {
  const model::Job& job;
  const std::vector<std::shared_ptr<const model::OpHistory>>& histories;
  const PgPairs& all;
  const PgPairs::Pair& pair;
  Windows w;
  mutable std::map<size_t, Collectives> read;  // dump index -> its collectives, for the witness
  size_t Index(const RankDump* d) const { return static_cast<size_t>(d - job.dumps.data()); }
  const PgSum& PSum(const RankDump* d) const { return *FindPg(all.per_dump[Index(d)], pair.pid); }
  const PgSum& QSum(const RankDump* d) const { return *FindPg(all.per_dump[Index(d)], pair.qid); }
  // The collectives of P (Q) on dump d, by seq.
  const std::vector<Coll>& P(const RankDump* d) const { return Of(d)[PSum(d).hpg]; }
  const std::vector<Coll>& Q(const RankDump* d) const { return Of(d)[QSum(d).hpg]; }
  // The op name of collective `c` of dump d.
  std::string_view Op(const RankDump* d, const Coll& c) const { return histories[Index(d)]->variants()[c.variant].op; }

 private:
  const Collectives& Of(const RankDump* d) const {
    auto it = read.find(Index(d));
    if (it == read.end()) it = read.emplace(Index(d), CollectivesOf(*histories[Index(d)])).first;
    return it->second;
  }
};

Windows WindowsOf(const PgPairs& all, const PgPairs::Pair& pair) {
  Windows w;
  for (size_t di : pair.dumps) {
    const PgSum* p = FindPg(all.per_dump[di], pair.pid);
    const PgSum* q = FindPg(all.per_dump[di], pair.qid);
    w.plo = std::max(w.plo, p->lo);
    w.phi = std::min(w.phi, p->hi);
    w.qlo = std::max(w.qlo, q->lo);
    w.qhi = std::min(w.qhi, q->hi);
  }
  return w;
}

// The ranks of every pair grouped by their order of P against Q (per pair,
// classes in the order their first rank comes in the job). Reads each
// dump's collectives once, for all its pairs, and drops them before the
// next dump's: what stays is a class's OrderLog and its ranks.
std::vector<std::vector<LoggedClass>> ClassesOfPairs(
    const model::Job& job, const std::vector<std::shared_ptr<const model::OpHistory>>& histories, const PgPairs& all,
    const std::vector<Windows>& windows) {
  std::vector<std::vector<uint32_t>> pairs_of(job.dumps.size());  // dump -> its pairs with a window
  for (size_t k = 0; k < all.pairs.size(); ++k)
    if (!windows[k].empty())
      for (size_t di : all.pairs[k].dumps) pairs_of[di].push_back(static_cast<uint32_t>(k));
  std::vector<std::vector<LoggedClass>> classes(all.pairs.size());
  std::vector<uint32_t> qpos;
  Order cur;
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    if (pairs_of[di].empty()) continue;
    const Collectives colls = CollectivesOf(*histories[di]);
    for (uint32_t k : pairs_of[di]) {
      const PgPairs::Pair& pair = all.pairs[k];
      const Windows& w = windows[k];
      const std::vector<Coll>& p = colls[FindPg(all.per_dump[di], pair.pid)->hpg];
      const std::vector<Coll>& q = colls[FindPg(all.per_dump[di], pair.qid)->hpg];
      OrderOf(Window(p, w.plo, w.phi), Window(q, w.qlo, w.qhi), &qpos, &cur);
      const uint64_t hash = OrderLog::Hash(cur);
      auto& cls = classes[k];
      auto it = std::find_if(cls.begin(), cls.end(), [&](const LoggedClass& c) { return c.order.Equals(cur, hash); });
      if (it == cls.end()) {
        cls.push_back({OrderLog(cur), {}, {}});
        it = cls.end() - 1;
      }
      it->ranks.push_back(job.dumps[di].rank);
      it->dumps.push_back(&job.dumps[di]);
    }
    std::vector<uint32_t>().swap(pairs_of[di]);
  }
  return classes;
}

void SortClasses(std::vector<RankClass>* classes) {
  std::stable_sort(classes->begin(), classes->end(), [](const RankClass& a, const RankClass& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
}

// The first P collective whose position against Q differs between two
// orders: (index in a, index in b), or (-1, -1) when they differ only
// where one side has a gap.
std::pair<int64_t, int64_t> FirstDifference(const Order& a, const Order& b) {
  for (size_t i = 0, j = 0; i < a.p_seqs.size() && j < b.p_seqs.size();) {
    if (a.p_seqs[i] < b.p_seqs[j]) {
      ++i;
    } else if (a.p_seqs[i] > b.p_seqs[j]) {
      ++j;
    } else if (a.q_before[i] == b.q_before[j]) {
      ++i, ++j;
    } else {
      return {static_cast<int64_t>(i), static_cast<int64_t>(j)};
    }
  }
  return {-1, -1};
}

// Writes what the witness shows: side `early` issues P seq s before the
// k-th Q collective in the window, side `late` issues that Q collective
// first. Summary, the two orders in words, and the four records.
void Witness(const PairView& v, const std::vector<RankClass>& classes, const RankClass& early, const RankClass& late,
             int64_t s, int32_t k, Finding* f) {
  const RankDump* ed = early.dumps[0];
  const RankDump* ld = late.dumps[0];
  auto lqw = Window(v.Q(ld), v.w.qlo, v.w.qhi);
  int64_t t = lqw[k].seq;  // the same Q seq on both sides (seqs are per pg)
  const Coll& ep_op = Window(v.P(ed), s, s)[0];
  const Coll& lp_op = Window(v.P(ld), s, s)[0];
  auto eq_it = Window(v.Q(ed), t, t);
  const Coll& lq_op = lqw[k];
  const PgSum& p0 = v.PSum(classes[0].dumps[0]);
  const PgSum& q0 = v.QSum(classes[0].dumps[0]);
  std::string pl = Label(v.pair.p, p0.desc), ql = Label(v.pair.q, q0.desc);
  f->seq = s;
  f->op = std::string(v.Op(ed, ep_op));
  std::string pop = pl + " seq " + std::to_string(s) + " " + f->op;
  std::string qop = ql + " seq " + std::to_string(t) + " " + std::string(v.Op(ld, lq_op));
  std::vector<model::Rank> all;
  for (const auto& cl : classes) all.insert(all.end(), cl.ranks.begin(), cl.ranks.end());
  std::sort(all.begin(), all.end());
  f->summary = "latent deadlock: " + pl + " and " + ql + " share " + RankWords(all) +
               " but are issued in different orders: " + RankWords(early.ranks) + Verb(early.ranks) + pop + " before " +
               qop + ", " + RankWords(late.ranks) + Verb(late.ranks) +
               "it after; this run did not hang, but on one serial "
               "device resource these orders deadlock";
  f->details.push_back(RankWords(early.ranks) + ": " + pop + ", then " + qop);
  f->details.push_back(RankWords(late.ranks) + ": " + qop + ", then " + pop);
  f->evidence.push_back({ed->file, ed->rank, ep_op.record_id, "issued " + pop + " first"});
  if (!eq_it.empty()) f->evidence.push_back({ed->file, ed->rank, eq_it[0].record_id, "then " + qop});
  f->evidence.push_back({ld->file, ld->rank, lq_op.record_id, "issued " + qop + " first"});
  f->evidence.push_back({ld->file, ld->rank, lp_op.record_id, "then " + pop});
}

// The finding for one pair whose ranks fall into two or more classes
// (sorted), or false when the classes differ only where one side has a gap.
bool InversionFinding(const PairView& v, const std::vector<RankClass>& classes, Finding* out) {
  const RankClass& ref = classes[0];
  Finding f;
  f.kind = Kind::kOrderInversion;
  f.severity = Severity::kWarning;
  f.hang = false;
  f.pg_name = std::string(v.pair.p);
  f.pg_desc = std::string(v.PSum(ref.dumps[0]).desc);
  f.roles.push_back({"reference order", ref.ranks});
  bool witnessed = false;
  for (size_t c = 1; c < classes.size(); ++c) {
    const RankClass& oth = classes[c];
    f.culprit_ranks.insert(f.culprit_ranks.end(), oth.ranks.begin(), oth.ranks.end());
    f.roles.push_back({"other order " + std::to_string(c), oth.ranks});
    if (witnessed) continue;
    auto [i, j] = FirstDifference(ref.order, oth.order);
    if (i < 0) continue;
    bool ref_early = ref.order.q_before[i] < oth.order.q_before[j];
    int32_t k = std::min(ref.order.q_before[i], oth.order.q_before[j]);
    Witness(v, classes, ref_early ? ref : oth, ref_early ? oth : ref, ref.order.p_seqs[i], k, &f);
    witnessed = true;
  }
  if (!witnessed) return false;
  std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
  f.details.push_back(
      "collectives of different pgs on the same devices must be issued in one order on every "
      "rank: a device that runs one at a time (AICPU slot, launch queue) waits for a peer that "
      "waits for it");
  f.fix_hint =
      "issue the operations of all process groups in one fixed order on every rank (one communication "
      "thread, or wait for one pg's op before issuing the other's)";
  *out = std::move(f);
  return true;
}

}  // namespace

std::vector<Finding> LatentOrderInversions(const model::Job& job, size_t max_findings) {
  return LatentOrderInversions(job, model::Histories(job), max_findings);
}

std::vector<Finding> LatentOrderInversions(const model::Job& job,
                                           const std::vector<std::shared_ptr<const model::OpHistory>>& histories,
                                           size_t max_findings) {
  PgPairs all = FindPgPairs(job, histories);
  std::vector<Windows> windows;
  windows.reserve(all.pairs.size());
  for (const PgPairs::Pair& pair : all.pairs) windows.push_back(WindowsOf(all, pair));
  std::vector<std::vector<LoggedClass>> logged = ClassesOfPairs(job, histories, all, windows);
  std::vector<Finding> out;
  size_t more = 0;
  for (size_t k = 0; k < all.pairs.size(); ++k) {
    if (windows[k].empty() || logged[k].size() < 2) continue;
    if (out.size() >= max_findings) {
      ++more;
      continue;
    }
    std::vector<RankClass> classes;
    for (LoggedClass& c : logged[k]) classes.push_back({c.order.Get(), std::move(c.ranks), std::move(c.dumps)});
    std::vector<LoggedClass>().swap(logged[k]);
    SortClasses(&classes);
    PairView v{job, histories, all, all.pairs[k], windows[k], {}};
    Finding f;
    if (InversionFinding(v, classes, &f)) out.push_back(std::move(f));
  }
  if (more && !out.empty())
    out.back().details.push_back(std::to_string(more) + " more pairs of pgs are issued in inconsistent orders");
  return out;
}

void LatentOrderCheck(const RankAnalysis& a, FindingSink* sink) {
  for (Finding& f : LatentOrderInversions(a.job, a.groups.histories())) sink->Add(std::move(f));
}

}  // namespace hangdx::analyze
