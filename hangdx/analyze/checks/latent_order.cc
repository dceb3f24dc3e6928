#include "hangdx/analyze/checks/latent_order.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

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

// One pg's collectives on one rank, by seq, first record of each seq.
struct PgOps {
  std::string_view name, desc, backend;
  int id = -1;  // job-wide id of `name`
  std::vector<Coll> by_seq;
};

// Pairs of pgs looked at per rank; a rank in more pgs than this compares the
// ones with the most collectives (pg pairs grow quadratically).
constexpr size_t kMaxPgsPerRank = 64;

// A rank's collectives per pg, pgs in the order of their first collective.
// Read from the rank's history: every op it recorded.
std::vector<PgOps> CollectivesByPg(const model::OpHistory& h) {
  std::vector<PgOps> out;
  std::vector<int> slot(h.pgs().size(), -1);  // history pg -> index in out
  h.ForEach([&](const model::HistoryItem& c) {
    if (slot[c.pg] < 0) {
      slot[c.pg] = static_cast<int>(out.size());
      const model::HistoryPg& pg = h.pgs()[c.pg];
      out.push_back({pg.name, pg.coll_desc, h.variants()[c.variant].backend, -1, {}});
    }
    out[slot[c.pg]].by_seq.push_back({c.seq, c.pos, c.record_id, c.variant});
  });
  for (auto& p : out) {
    std::stable_sort(p.by_seq.begin(), p.by_seq.end(), [](const Coll& a, const Coll& b) { return a.seq < b.seq; });
    p.by_seq.erase(
        std::unique(p.by_seq.begin(), p.by_seq.end(), [](const Coll& a, const Coll& b) { return a.seq == b.seq; }),
        p.by_seq.end());
  }
  if (out.size() > kMaxPgsPerRank) {
    std::stable_sort(out.begin(), out.end(),
                     [](const PgOps& a, const PgOps& b) { return a.by_seq.size() > b.by_seq.size(); });
    out.resize(kMaxPgsPerRank);
  }
  return out;
}

// `list` sorted by id.
const PgOps* FindPg(const std::vector<PgOps>& list, int id) {
  auto it = std::lower_bound(list.begin(), list.end(), id, [](const PgOps& p, int i) { return p.id < i; });
  return it != list.end() && it->id == id ? &*it : nullptr;
}

// The entries of `p` with seq in [lo, hi].
std::span<const Coll> Window(const PgOps& p, int64_t lo, int64_t hi) {
  auto b = std::lower_bound(p.by_seq.begin(), p.by_seq.end(), lo, [](const Coll& c, int64_t s) { return c.seq < s; });
  auto e = std::upper_bound(p.by_seq.begin(), p.by_seq.end(), hi, [](int64_t s, const Coll& c) { return s < c.seq; });
  return {p.by_seq.data() + (b - p.by_seq.begin()), static_cast<size_t>(e - b)};
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

struct RankClass {
  Order order;
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
// rank's collectives of every pg it records. Pg names get job-wide ids
// (views into the dumps' interners stay valid); every (pair of pg ids, dump)
// is one 16-byte row, sorted: no per-pair allocation, so 100,000 ranks x 28
// pairs stay cheap.
struct PgPairs {
  struct Pair {
    std::string_view p, q;  // names, p < q
    int pid, qid;
    std::vector<size_t> dumps;  // the dumps that record both, in job order
  };
  std::vector<std::vector<PgOps>> per_dump;  // per dump, sorted by id
  std::vector<Pair> pairs;                   // in name order, so findings do not depend on input order
};

PgPairs FindPgPairs(const model::Job& job, const std::vector<std::shared_ptr<const model::OpHistory>>& histories) {
  PgPairs out;
  out.per_dump.reserve(job.dumps.size());
  std::unordered_map<std::string_view, int> ids;
  std::vector<std::string_view> id_name;
  std::vector<std::pair<uint64_t, uint32_t>> rows;
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    // A rank with collectives in one pg is in no pair: its collectives are
    // not gathered (a 10 GB log of one communicator has 85 million).
    const auto& pgs = histories[di]->pgs();
    bool two = std::count_if(pgs.begin(), pgs.end(), [](const model::HistoryPg& pg) { return pg.first_seq >= 0; }) >= 2;
    out.per_dump.push_back(two ? CollectivesByPg(*histories[di]) : std::vector<PgOps>());
    auto& list = out.per_dump.back();
    for (auto& p : list) {
      auto [it, fresh] = ids.emplace(p.name, static_cast<int>(id_name.size()));
      if (fresh) id_name.push_back(p.name);
      p.id = it->second;
    }
    std::sort(list.begin(), list.end(), [](const PgOps& a, const PgOps& b) { return a.id < b.id; });
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

// One pair of pgs as the check reads it: the job, each rank's collectives and the window.
struct PairView {
  const model::Job& job;
  const std::vector<std::shared_ptr<const model::OpHistory>>& histories;
  const PgPairs& all;
  const PgPairs::Pair& pair;
  Windows w;
  const PgOps& P(const RankDump* d) const { return *FindPg(all.per_dump[d - job.dumps.data()], pair.pid); }
  const PgOps& Q(const RankDump* d) const { return *FindPg(all.per_dump[d - job.dumps.data()], pair.qid); }
  // The op name of collective `c` of dump d.
  std::string_view Op(const RankDump* d, const Coll& c) const {
    return histories[d - job.dumps.data()]->variants()[c.variant].op;
  }
};

Windows WindowsOf(const PgPairs& all, const PgPairs::Pair& pair) {
  Windows w;
  for (size_t di : pair.dumps) {
    const PgOps* p = FindPg(all.per_dump[di], pair.pid);
    const PgOps* q = FindPg(all.per_dump[di], pair.qid);
    w.plo = std::max(w.plo, p->by_seq.front().seq);
    w.phi = std::min(w.phi, p->by_seq.back().seq);
    w.qlo = std::max(w.qlo, q->by_seq.front().seq);
    w.qhi = std::min(w.qhi, q->by_seq.back().seq);
  }
  return w;
}

// The ranks of the pair grouped by their order of P against Q, the largest
// class first (a tie: the class holding the lowest rank).
std::vector<RankClass> ClassesOf(const PairView& v, std::vector<uint32_t>* qpos, Order* cur) {
  std::vector<RankClass> classes;
  for (size_t di : v.pair.dumps) {
    const RankDump* d = &v.job.dumps[di];
    OrderOf(Window(v.P(d), v.w.plo, v.w.phi), Window(v.Q(d), v.w.qlo, v.w.qhi), qpos, cur);
    auto it = std::find_if(classes.begin(), classes.end(), [&](const RankClass& c) { return c.order == *cur; });
    if (it == classes.end()) {
      classes.push_back({*cur, {}, {}});
      it = classes.end() - 1;
    }
    it->ranks.push_back(d->rank);
    it->dumps.push_back(d);
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
  const PgOps& p0 = v.P(classes[0].dumps[0]);
  const PgOps& q0 = v.Q(classes[0].dumps[0]);
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
  f.pg_desc = std::string(v.P(ref.dumps[0]).desc);
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
  std::vector<Finding> out;
  size_t more = 0;
  std::vector<uint32_t> qpos;
  Order cur;
  for (const PgPairs::Pair& pair : all.pairs) {
    PairView v{job, histories, all, pair, WindowsOf(all, pair)};
    if (v.w.empty()) continue;
    std::vector<RankClass> classes = ClassesOf(v, &qpos, &cur);
    if (classes.size() < 2) continue;
    if (out.size() >= max_findings) {
      ++more;
      continue;
    }
    SortClasses(&classes);
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
