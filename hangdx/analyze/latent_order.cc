#include "hangdx/analyze/latent_order.h"

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

// One pg's collectives on one rank: (seq, index into RankDump::ops) by seq,
// first record of each seq.
struct PgOps {
  std::string_view name, desc, backend;
  int id = -1;  // job-wide id of `name`
  std::vector<std::pair<int64_t, uint32_t>> by_seq;
};

// Pairs of pgs looked at per rank; a rank in more pgs than this compares the
// ones with the most collectives (pg pairs grow quadratically).
constexpr size_t kMaxPgsPerRank = 64;

std::vector<PgOps> CollectivesByPg(const RankDump& d) {
  std::vector<PgOps> out;
  for (uint32_t i = 0; i < d.ops.size(); ++i) {
    const OpRecord& op = d.ops[i];
    if (op.is_p2p || op.collective_seq < 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const PgOps& p) {
      return p.name.data() == op.pg_name.data() || p.name == op.pg_name;  // interned: usually the same address
    });
    if (it == out.end()) {
      out.push_back({op.pg_name, op.pg_desc, op.backend, {}});
      it = out.end() - 1;
    }
    it->by_seq.emplace_back(op.collective_seq, i);
  }
  for (auto& p : out) {
    std::stable_sort(p.by_seq.begin(), p.by_seq.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    p.by_seq.erase(
        std::unique(p.by_seq.begin(), p.by_seq.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
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
std::span<const std::pair<int64_t, uint32_t>> Window(const PgOps& p, int64_t lo, int64_t hi) {
  auto b = std::lower_bound(p.by_seq.begin(), p.by_seq.end(), std::make_pair(lo, uint32_t{0}));
  auto e = std::upper_bound(p.by_seq.begin(), p.by_seq.end(), std::make_pair(hi, UINT32_MAX));
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
void OrderOf(std::span<const std::pair<int64_t, uint32_t>> pw, std::span<const std::pair<int64_t, uint32_t>> qw,
             std::vector<uint32_t>* qpos, Order* o) {
  qpos->clear();
  for (const auto& [seq, idx] : qw) qpos->push_back(idx);
  std::sort(qpos->begin(), qpos->end());
  o->p_seqs.clear();
  o->q_before.clear();
  for (const auto& [seq, idx] : pw) {
    o->p_seqs.push_back(seq);
    o->q_before.push_back(static_cast<int32_t>(std::lower_bound(qpos->begin(), qpos->end(), idx) - qpos->begin()));
  }
}

struct RankClass {
  Order order;
  std::vector<model::Rank> ranks;
  std::vector<const RankDump*> dumps;
};

std::string Label(std::string_view name, std::string_view desc) {
  bool show = !desc.empty() && desc != "undefined" && desc.size() <= 32;
  return "pg " + std::string(name) + (show ? " (" + std::string(desc) + ")" : "");
}

// " issues " after one rank, " issue " after several.
const char* Verb(const std::vector<model::Rank>& ranks) { return ranks.size() == 1 ? " issues " : " issue "; }

}  // namespace

std::vector<Finding> LatentOrderInversions(const model::Job& job, size_t max_findings) {
  std::vector<std::vector<PgOps>> per_dump;
  per_dump.reserve(job.dumps.size());
  // Pg names get job-wide ids (views into the dumps' interners stay valid);
  // every (pair of pg ids, dump) is one 16-byte row, sorted: no per-pair
  // allocation, so 100,000 ranks x 28 pairs stay cheap.
  std::unordered_map<std::string_view, int> ids;
  std::vector<std::string_view> id_name;
  std::vector<std::pair<uint64_t, uint32_t>> rows;
  for (size_t di = 0; di < job.dumps.size(); ++di) {
    per_dump.push_back(CollectivesByPg(job.dumps[di]));
    auto& list = per_dump.back();
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
  // Pairs in name order, so that findings do not depend on input order.
  struct PairRange {
    std::string_view p, q;  // names, p < q
    int pid, qid;
    size_t begin, end;  // rows
  };
  std::vector<PairRange> pairs;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].first == rows[i].first) ++j;
    if (j - i >= 2) {
      int a = static_cast<int>(rows[i].first >> 32), b = static_cast<int>(rows[i].first & 0xffffffffu);
      if (id_name[b] < id_name[a]) std::swap(a, b);
      pairs.push_back({id_name[a], id_name[b], a, b, i, j});
    }
    i = j;
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const PairRange& x, const PairRange& y) { return x.p != y.p ? x.p < y.p : x.q < y.q; });
  std::vector<Finding> out;
  size_t more = 0;
  std::vector<size_t> dumps;
  std::vector<uint32_t> qpos;
  Order cur;
  for (const PairRange& pr : pairs) {
    dumps.clear();
    for (size_t i = pr.begin; i < pr.end; ++i) dumps.push_back(rows[i].second);
    const std::pair<std::string_view, std::string_view> names{pr.p, pr.q};
    // The seqs every one of these ranks recorded, for both pgs.
    int64_t plo = INT64_MIN, phi = INT64_MAX, qlo = INT64_MIN, qhi = INT64_MAX;
    for (size_t di : dumps) {
      const PgOps* p = FindPg(per_dump[di], pr.pid);
      const PgOps* q = FindPg(per_dump[di], pr.qid);
      plo = std::max(plo, p->by_seq.front().first);
      phi = std::min(phi, p->by_seq.back().first);
      qlo = std::max(qlo, q->by_seq.front().first);
      qhi = std::min(qhi, q->by_seq.back().first);
    }
    if (plo > phi || qlo > qhi) continue;
    std::vector<RankClass> classes;
    for (size_t di : dumps) {
      const PgOps* p = FindPg(per_dump[di], pr.pid);
      const PgOps* q = FindPg(per_dump[di], pr.qid);
      OrderOf(Window(*p, plo, phi), Window(*q, qlo, qhi), &qpos, &cur);
      auto it = std::find_if(classes.begin(), classes.end(), [&](const RankClass& c) { return c.order == cur; });
      if (it == classes.end()) {
        classes.push_back({cur, {}, {}});
        it = classes.end() - 1;
      }
      it->ranks.push_back(job.dumps[di].rank);
      it->dumps.push_back(&job.dumps[di]);
    }
    if (classes.size() < 2) continue;
    if (out.size() >= max_findings) {
      ++more;
      continue;
    }
    std::stable_sort(classes.begin(), classes.end(), [](const RankClass& a, const RankClass& b) {
      if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
      return a.ranks.front() < b.ranks.front();
    });
    const RankClass& ref = classes[0];
    const PgOps& p0 = *FindPg(per_dump[ref.dumps[0] - job.dumps.data()], pr.pid);
    const PgOps& q0 = *FindPg(per_dump[ref.dumps[0] - job.dumps.data()], pr.qid);
    Finding f;
    f.kind = Kind::kOrderInversion;
    f.severity = Severity::kWarning;
    f.hang = false;
    f.pg_name = std::string(pr.p);
    f.pg_desc = std::string(p0.desc);
    std::string pl = Label(names.first, p0.desc), ql = Label(names.second, q0.desc);
    f.roles.push_back({"reference order", ref.ranks});
    bool witnessed = false;
    for (size_t c = 1; c < classes.size(); ++c) {
      const RankClass& oth = classes[c];
      f.culprit_ranks.insert(f.culprit_ranks.end(), oth.ranks.begin(), oth.ranks.end());
      f.roles.push_back({"other order " + std::to_string(c), oth.ranks});
      if (witnessed) continue;
      // The first P collective whose position against Q differs.
      const Order& a = ref.order;
      const Order& b = oth.order;
      for (size_t i = 0, j = 0; i < a.p_seqs.size() && j < b.p_seqs.size();) {
        if (a.p_seqs[i] < b.p_seqs[j]) {
          ++i;
          continue;
        }
        if (a.p_seqs[i] > b.p_seqs[j]) {
          ++j;
          continue;
        }
        if (a.q_before[i] == b.q_before[j]) {
          ++i, ++j;
          continue;
        }
        // Side "early" issues P seq s before Q's k-th collective in the
        // window; side "late" issues that Q collective first.
        bool ref_early = a.q_before[i] < b.q_before[j];
        const RankClass& early = ref_early ? ref : oth;
        const RankClass& late = ref_early ? oth : ref;
        int32_t k = std::min(a.q_before[i], b.q_before[j]);
        int64_t s = a.p_seqs[i];
        const RankDump* ed = early.dumps[0];
        const RankDump* ld = late.dumps[0];
        const PgOps& ep = *FindPg(per_dump[ed - job.dumps.data()], pr.pid);
        const PgOps& eq = *FindPg(per_dump[ed - job.dumps.data()], pr.qid);
        const PgOps& lp = *FindPg(per_dump[ld - job.dumps.data()], pr.pid);
        const PgOps& lq = *FindPg(per_dump[ld - job.dumps.data()], pr.qid);
        auto eqw = Window(eq, qlo, qhi);
        auto lqw = Window(lq, qlo, qhi);
        int64_t t = lqw[k].first;  // the same Q seq on both sides (seqs are per pg)
        const OpRecord& ep_op = ed->ops[Window(ep, s, s)[0].second];
        const OpRecord& lp_op = ld->ops[Window(lp, s, s)[0].second];
        auto eq_it = Window(eq, t, t);
        const OpRecord& lq_op = ld->ops[lqw[k].second];
        f.seq = s;
        f.op = std::string(ep_op.op);
        std::string pop = pl + " seq " + std::to_string(s) + " " + std::string(ep_op.op);
        std::string qop = ql + " seq " + std::to_string(t) + " " + std::string(lq_op.op);
        f.summary = "latent deadlock: " + pl + " and " + ql + " share " + RankWords([&] {
                      std::vector<model::Rank> all;
                      for (const auto& cl : classes) all.insert(all.end(), cl.ranks.begin(), cl.ranks.end());
                      std::sort(all.begin(), all.end());
                      return all;
                    }()) +
                    " but are issued in different orders: " + RankWords(early.ranks) + Verb(early.ranks) + pop +
                    " before " + qop + ", " + RankWords(late.ranks) + Verb(late.ranks) +
                    "it after; this run did not hang, but on one serial "
                    "device resource these orders deadlock";
        f.details.push_back(RankWords(early.ranks) + ": " + pop + ", then " + qop);
        f.details.push_back(RankWords(late.ranks) + ": " + qop + ", then " + pop);
        f.evidence.push_back({ed->file, ed->rank, ep_op.record_id, "issued " + pop + " first"});
        if (!eq_it.empty())
          f.evidence.push_back({ed->file, ed->rank, ed->ops[eq_it[0].second].record_id, "then " + qop});
        f.evidence.push_back({ld->file, ld->rank, lq_op.record_id, "issued " + qop + " first"});
        f.evidence.push_back({ld->file, ld->rank, lp_op.record_id, "then " + pop});
        witnessed = true;
        break;
      }
    }
    std::sort(f.culprit_ranks.begin(), f.culprit_ranks.end());
    if (!witnessed) continue;  // the classes differ only where one side has a gap
    f.details.push_back(
        "collectives of different pgs on the same devices must be issued in one order on every "
        "rank: a device that runs one at a time (AICPU slot, launch queue) waits for a peer that "
        "waits for it");
    f.fix_hint =
        "issue the operations of all process groups in one fixed order on every rank (one communication "
        "thread, or wait for one pg's op before issuing the other's)";
    out.push_back(std::move(f));
  }
  if (more && !out.empty())
    out.back().details.push_back(std::to_string(more) + " more pairs of pgs are issued in inconsistent orders");
  return out;
}

}  // namespace hangdx::analyze
