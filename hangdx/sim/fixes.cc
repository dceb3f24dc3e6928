#include "hangdx/sim/fixes.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

namespace hangdx::sim {
namespace {

using model::DevOp;
using model::OpId;
using OpKind = DevOp::Kind;
using Clock = std::chrono::steady_clock;

bool IsPgOp(const DevOp& op) {
  return op.kind == OpKind::kCollective || op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
}

// Nothing issued, nothing finished: the program can run under another
// queue mode as it is.
bool IsSchedule(const model::DeviceJob& job) {
  for (const auto& r : job.ranks) {
    for (const auto& t : r.threads) {
      if (t.blocked_on >= 0) return false;
    }
    for (const auto& q : r.queues) {
      if (!q.entries.empty() || q.dispatching >= 0) return false;
    }
    for (const auto& s : r.streams) {
      if (!s.tasks.empty()) return false;
    }
  }
  return std::none_of(job.finished.begin(), job.finished.end(), [](bool f) { return f; });
}

// Pools that are full in the stuck state with a stream head waiting for a unit.
std::vector<std::string> FullPools(const model::DeviceJob& stuck) {
  std::set<std::string> names;
  for (const auto& r : stuck.ranks) {
    for (const auto& p : r.pools) {
      if (static_cast<int>(p.holders.size()) < p.capacity) continue;
      for (const auto& s : r.streams) {
        if (!s.tasks.empty() && !s.head_started && s.tasks[0] >= 0 &&
            static_cast<size_t>(s.tasks[0]) < stuck.ops.size() && stuck.ops[s.tasks[0]].pool == p.name)
          names.insert(p.name);
      }
    }
  }
  return {names.begin(), names.end()};
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Rewrites every thread's program so that ops of different pgs follow one
// global order, built from the ranks in `ranks_order`: each rank's sequence
// of (pg, k-th op of that pg on the rank) is merged into the order, new
// pairs right after the pair before them. Ops of one pg keep their relative
// order and non-pg ops keep their positions. Returns false when nothing
// changes; `*what` says what moved first.
bool ConsistentOrder(model::DeviceJob* job, const std::vector<size_t>& ranks_order, std::string* what) {
  using Pair = std::pair<std::string, int>;
  auto pairs_of = [&](const model::DeviceRank& r) {
    std::vector<std::vector<Pair>> per_thread;
    std::map<std::string, int> k;
    for (const auto& t : r.threads) {
      per_thread.emplace_back();
      for (OpId id : t.pending) {
        const DevOp& op = job->ops[id];
        if (IsPgOp(op)) per_thread.back().push_back({op.pg, k[op.pg]++});
      }
    }
    return per_thread;
  };
  std::vector<Pair> order;
  for (size_t ri : ranks_order) {
    for (const auto& thread : pairs_of(job->ranks[ri])) {
      size_t prev = order.size();  // position of the previous pair of this thread; none yet
      for (const Pair& p : thread) {
        auto it = std::find(order.begin(), order.end(), p);
        if (it != order.end()) {
          prev = static_cast<size_t>(it - order.begin());
          continue;
        }
        size_t at = prev == order.size() ? order.size() : prev + 1;
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), p);
        prev = at;
      }
    }
  }
  std::map<Pair, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  bool changed = false;
  for (auto& r : job->ranks) {
    auto per_thread = pairs_of(r);
    for (size_t ti = 0; ti < r.threads.size(); ++ti) {
      auto& pending = r.threads[ti].pending;
      std::vector<size_t> slots;
      std::vector<std::pair<size_t, OpId>> keyed;
      std::map<std::string, size_t> floor;  // running max per pg: its ops never swap
      for (size_t i = 0, j = 0; i < pending.size(); ++i) {
        const DevOp& op = job->ops[pending[i]];
        if (!IsPgOp(op)) continue;
        size_t key = std::max(pos[per_thread[ti][j++]], floor[op.pg]);
        floor[op.pg] = key;
        slots.push_back(i);
        keyed.push_back({key, pending[i]});
      }
      std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t i = 0; i < slots.size(); ++i) {
        if (pending[slots[i]] == keyed[i].second) continue;
        if (!changed) {
          *what = "rank " + std::to_string(r.rank) + " thread " + r.threads[ti].name + " issues " +
                  OpLabel(job->ops[keyed[i].second]) + " before " + OpLabel(job->ops[pending[slots[i]]]);
        }
        changed = true;
        pending[slots[i]] = keyed[i].second;
      }
    }
  }
  return changed;
}

// On odd ranks, each send followed (among the thread's P2P ops) by a recv
// from the same peer on the same pg becomes recv, then send.
bool ParityOrder(model::DeviceJob* job) {
  bool changed = false;
  for (auto& r : job->ranks) {
    if (r.rank % 2 == 0) continue;
    for (auto& t : r.threads) {
      auto& p = t.pending;
      for (size_t i = 0; i < p.size(); ++i) {
        const DevOp& a = job->ops[p[i]];
        if (a.kind != OpKind::kSend) continue;
        size_t j = i + 1;
        while (j < p.size() && job->ops[p[j]].kind != OpKind::kSend && job->ops[p[j]].kind != OpKind::kRecv) ++j;
        if (j == p.size()) break;
        const DevOp& b = job->ops[p[j]];
        if (b.kind == OpKind::kRecv && b.pg == a.pg && b.peer == a.peer) {
          std::swap(p[i], p[j]);
          changed = true;
          i = j;
        }
      }
    }
  }
  return changed;
}

// Simulates one candidate within what is left of the search's time budget
// (`deadline`); *ok is false when the simulator refuses it or no time is left.
FixTrial Try(const FixCandidate& c, ExploreOptions options, Clock::time_point deadline, bool* ok, int* untried) {
  FixTrial t;
  t.kind = c.kind;
  t.change = c.change;
  options.max_seconds = std::chrono::duration<double>(deadline - Clock::now()).count();
  if (options.max_seconds <= 0) {
    *ok = false;
    if (untried) ++*untried;
    return t;
  }
  auto r = Explore(c.job, options);
  *ok = r.ok();
  if (!r.ok()) return t;
  t.passes = !r->deadlock;
  t.bound_reached = r->bound_reached;
  t.states = r->states;
  t.seconds = r->seconds;
  return t;
}

}  // namespace

std::vector<FixCandidate> FixCandidates(const model::DeviceJob& job, const model::DeviceJob& stuck) {
  std::vector<FixCandidate> out;
  if (IsSchedule(job)) {
    for (auto m : {model::QueueMode::kOff, model::QueueMode::kPerDevice, model::QueueMode::kPerStream}) {
      if (m == job.queue_mode) continue;
      FixCandidate c{"queue_mode",
                     std::string("task queue mode ") + model::QueueModeName(m) + " (now " +
                         model::QueueModeName(job.queue_mode) + ")",
                     job};
      c.job.queue_mode = m;
      for (auto& r : c.job.ranks) r.queues.clear();
      out.push_back(std::move(c));
    }
  }
  std::set<OpId> holding_ops;  // ops holding a unit of some pool now
  for (const auto& r : job.ranks) {
    for (const auto& p : r.pools) holding_ops.insert(p.holders.begin(), p.holders.end());
  }
  for (const std::string& pool : FullPools(stuck)) {
    FixCandidate c{"no_hold",
                   "collectives and P2P ops do not hold a unit of " + pool +
                       " while they wait (operator retry off: the kernel does not stay resident)",
                   job};
    bool changed = false;
    for (size_t i = 0; i < c.job.ops.size(); ++i) {
      DevOp& op = c.job.ops[i];
      if (!IsPgOp(op) || op.pool != pool) continue;
      // An op already holding a unit keeps it: only what has not started changes.
      if (holding_ops.count(static_cast<OpId>(i))) continue;
      op.pool.clear();
      changed = true;
    }
    if (changed) out.push_back(std::move(c));
  }
  std::vector<size_t> up(job.ranks.size()), down;
  for (size_t i = 0; i < up.size(); ++i) up[i] = i;
  down.assign(up.rbegin(), up.rend());
  std::vector<std::vector<OpId>> seen;  // programs already proposed
  for (const auto* ranks_order : {&up, &down}) {
    if (ranks_order->empty()) break;
    FixCandidate c{"order", "", job};
    std::string what;
    if (!ConsistentOrder(&c.job, *ranks_order, &what)) continue;
    std::vector<OpId> flat;
    for (const auto& r : c.job.ranks) {
      for (const auto& t : r.threads) flat.insert(flat.end(), t.pending.begin(), t.pending.end());
    }
    if (std::find(seen.begin(), seen.end(), flat) != seen.end()) continue;
    seen.push_back(flat);
    std::set<std::string> pgs;
    for (const auto& op : job.ops) {
      if (IsPgOp(op)) pgs.insert(op.pg);
    }
    c.change = "issue the ops of pgs " + Join({pgs.begin(), pgs.end()}, ", ") + " in one order on every rank (rank " +
               std::to_string(job.ranks[ranks_order->front()].rank) + "'s order: " + what + ")";
    out.push_back(std::move(c));
  }
  FixCandidate parity{"parity", "on odd ranks, post each recv before its paired send (pair by parity)", job};
  if (ParityOrder(&parity.job)) out.push_back(std::move(parity));
  return out;
}

std::vector<FixTrial> SearchFixes(const model::DeviceJob& job, const ExploreResult& deadlock,
                                  const ExploreOptions& options, int* untried) {
  std::vector<FixTrial> out;
  std::vector<FixCandidate> candidates = FixCandidates(job, deadlock.stuck);
  // All candidates together get the time one exploration may take.
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::min(options.max_seconds, 1e7)));
  // Queue modes first, then the capacity series, then the rest.
  size_t i = 0;
  bool ok = false;
  for (; i < candidates.size() && candidates[i].kind == "queue_mode"; ++i) {
    FixTrial t = Try(candidates[i], options, deadline, &ok, untried);
    if (ok) out.push_back(t);
  }
  for (const std::string& pool : FullPools(deadlock.stuck)) {
    int now = 0, most = 0;
    for (const auto& r : job.ranks) {
      int uses = 0;
      for (const auto& t : r.threads) {
        for (OpId id : t.pending) uses += job.ops[id].pool == pool;
      }
      for (const auto& s : r.streams) {
        for (OpId id : s.tasks) uses += job.ops[id].pool == pool;
      }
      for (const auto& q : r.queues) {
        for (OpId id : q.entries) uses += job.ops[id].pool == pool;
      }
      most = std::max(most, uses);
      for (const auto& p : r.pools) {
        if (p.name == pool) now = std::max(now, p.capacity);
      }
    }
    FixTrial last;
    bool passed = false;
    int tries = 0;
    for (int cap = now + 1; cap <= most && tries < 8; ++cap) {
      ++tries;
      FixCandidate c{
          "capacity",
          "pool " + pool + " capacity " + std::to_string(cap) + " on every rank (now " + std::to_string(now) + ")",
          job};
      for (auto& r : c.job.ranks) {
        for (auto& p : r.pools) {
          if (p.name == pool) p.capacity = std::max(p.capacity, cap);
        }
      }
      last = Try(c, options, deadline, &ok, untried);
      if (!ok) break;
      if (last.passes) {
        passed = true;
        break;
      }
    }
    if (tries > 0 && ok) {
      if (!passed) {
        last.change = "pool " + pool + " capacity " + std::to_string(now + 1) + "-" + std::to_string(now + tries) +
                      " on every rank (now " + std::to_string(now) + ")";
      }
      out.push_back(last);
    }
  }
  for (; i < candidates.size(); ++i) {
    FixTrial t = Try(candidates[i], options, deadline, &ok, untried);
    if (ok) out.push_back(t);
  }
  return out;
}

}  // namespace hangdx::sim
