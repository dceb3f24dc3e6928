#include "hangdx/live/stall_detector.h"

#include <algorithm>

namespace hangdx::live {
namespace {

// How far a rank got in a pg: ops enqueued plus ops completed, so that a
// rank waiting in seq s + 1 (enqueued s + 1, completed s) is ahead of one
// that has not entered it (enqueued s, completed s).
int64_t Score(const PgProgress& p) { return p.enqueued + p.completed; }

}  // namespace

void StallDetector::Observe(Rank rank, Clock::time_point now, const std::vector<PgProgress>& pgs) {
  RankState& rs = ranks_[rank];
  rs.seen = now;
  if (!rs.answered) rs.changed = now;
  rs.answered = true;
  for (const auto& p : pgs) {
    auto [it, fresh] = rs.pgs.emplace(p.pg, p);
    Pg& pg = pgs_[p.pg];
    if (fresh || it->second.enqueued != p.enqueued || it->second.completed != p.completed) {
      it->second = p;
      rs.changed = now;
      // A round observes its ranks at their answers' times, not in order.
      pg.last_change = std::max(pg.last_change, now);
      DueBy(pg.last_change + opt_.stall_after);
    }
    pg.members.insert(rank);
  }
}

void StallDetector::AddMembers(const std::string& pg, const std::vector<Rank>& ranks) {
  auto [it, fresh] = pgs_.emplace(pg, Pg{});
  it->second.members.insert(ranks.begin(), ranks.end());
  if (fresh) DueBy(it->second.last_change + opt_.stall_after);
}

void StallDetector::Unanswered(Rank rank, Clock::time_point now) { ranks_.emplace(rank, RankState{}); }

size_t StallDetector::ranks_answered() const {
  size_t n = 0;
  for (const auto& [r, rs] : ranks_) n += rs.answered;
  return n;
}

void StallDetector::Restore(Rank rank, const std::vector<PgProgress>& pgs, Clock::time_point changed,
                            Clock::time_point seen) {
  RankState& rs = ranks_[rank];
  rs.answered = true;
  rs.seen = seen;
  rs.changed = changed;
  for (const auto& p : pgs) {
    rs.pgs[p.pg] = p;
    Pg& pg = pgs_[p.pg];
    pg.members.insert(rank);
    pg.last_change = std::max(pg.last_change, changed);
    DueBy(pg.last_change + opt_.stall_after);
  }
}

std::vector<Rank> StallDetector::Silent(Clock::time_point now) const {
  std::vector<Rank> out;
  for (const auto& [r, rs] : ranks_)
    if (rs.answered && now - rs.seen >= opt_.stall_after) out.push_back(r);
  return out;
}

bool StallDetector::JobGone(Clock::time_point now) const {
  bool any = false;
  for (const auto& [r, rs] : ranks_) {
    if (!rs.answered) continue;
    any = true;
    if (now - rs.seen < opt_.stall_after) return false;
  }
  return any;
}

std::vector<PgProgress> StallDetector::Last(Rank rank) const {
  std::vector<PgProgress> out;
  auto it = ranks_.find(rank);
  if (it != ranks_.end())
    for (const auto& [id, p] : it->second.pgs) out.push_back(p);
  return out;
}

Clock::time_point StallDetector::LastSeen(Rank rank) const {
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? Clock::time_point() : it->second.seen;
}

Clock::time_point StallDetector::LastChange(Rank rank) const {
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? Clock::time_point() : it->second.changed;
}

bool StallDetector::Stalled(const std::string& id, const Pg& pg, Clock::time_point now) const {
  if (now - pg.last_change < opt_.stall_after) return false;
  bool unfinished = false, answering = false;
  for (Rank m : pg.members) {
    auto it = ranks_.find(m);
    if (it == ranks_.end()) continue;
    auto p = it->second.pgs.find(id);
    if (p != it->second.pgs.end() && p->second.Unfinished()) unfinished = true;
    if (it->second.answered && now - it->second.seen < opt_.stall_after) answering = true;
  }
  return unfinished && answering;
}

std::vector<PgState> StallDetector::Pgs(Clock::time_point now) const {
  std::vector<PgState> out;
  for (const auto& [id, pg] : pgs_) {
    PgState s;
    s.pg = id;
    s.members.assign(pg.members.begin(), pg.members.end());
    s.last_change = pg.last_change;
    int64_t low = INT64_MAX, high = INT64_MIN;
    for (Rank m : pg.members) {
      auto it = ranks_.find(m);
      if (it == ranks_.end()) continue;
      auto p = it->second.pgs.find(id);
      if (p == it->second.pgs.end()) continue;
      const PgProgress& g = p->second;
      s.min_completed = s.min_completed < 0 ? g.completed : std::min(s.min_completed, g.completed);
      s.max_completed = std::max(s.max_completed, g.completed);
      s.max_enqueued = std::max(s.max_enqueued, g.enqueued);
      s.unfinished = s.unfinished || g.Unfinished();
      low = std::min(low, Score(g));
      high = std::max(high, Score(g));
    }
    if (low < high) {
      for (Rank m : pg.members) {
        auto it = ranks_.find(m);
        if (it == ranks_.end()) continue;
        auto p = it->second.pgs.find(id);
        if (p != it->second.pgs.end() && Score(p->second) == low) s.behind.push_back(m);
      }
    }
    s.stalled = Stalled(id, pg, now);
    out.push_back(std::move(s));
  }
  return out;
}

bool StallDetector::Due(Clock::time_point now) {
  if (now < next_due_) return false;
  bool due = false;
  next_due_ = Clock::time_point::max();
  for (auto& [id, pg] : pgs_) {
    if (pg.due_said == pg.last_change) continue;  // said in this quiet spell; a change calls DueBy
    if (now - pg.last_change >= opt_.stall_after) {
      pg.due_said = pg.last_change;
      due = true;
    } else {
      DueBy(pg.last_change + opt_.stall_after);
    }
  }
  return due;
}

std::vector<Stall> StallDetector::Check(Clock::time_point now) {
  Stall st;
  std::set<Rank> involved, behind;
  bool fresh_pg = false, fresh_silent = false;
  Clock::time_point since = now;
  std::vector<std::string> keys;
  // Pgs without progress: every stalled pg joins the details (a cycle
  // across two pgs needs both), but only a new episode triggers them.
  for (const PgState& s : Pgs(now)) {
    if (!s.stalled) continue;
    std::string key = "pg " + s.pg + " at " + std::to_string(s.min_completed) + "/" + std::to_string(s.max_enqueued);
    if (reported_.insert(key).second) {
      fresh_pg = true;
      keys.push_back(key);
    }
    st.pgs.push_back(s.pg);
    involved.insert(s.members.begin(), s.members.end());
    behind.insert(s.behind.begin(), s.behind.end());
    since = std::min(since, s.last_change);
  }
  // Ranks that stopped answering while others still answer.
  if (!JobGone(now)) {
    for (Rank r : Silent(now)) {
      const RankState& rs = ranks_.at(r);
      std::string key = "rank " + std::to_string(r) + " silent after " + FormatCompact(Last(r));
      if (!reported_.insert(key).second) continue;
      fresh_silent = true;
      keys.push_back(key);
      st.silent.push_back(r);
      involved.insert(r);
      since = std::min(since, rs.seen);
      for (const auto& [id, p] : rs.pgs) {
        if (std::find(st.pgs.begin(), st.pgs.end(), id) == st.pgs.end()) st.pgs.push_back(id);
        const auto& members = pgs_.at(id).members;
        involved.insert(members.begin(), members.end());
      }
    }
  }
  if (!fresh_pg && !fresh_silent) return {};
  st.reason = fresh_pg ? Stall::Reason::kNoProgress : Stall::Reason::kSilentRank;
  std::sort(st.pgs.begin(), st.pgs.end());
  st.ranks.assign(involved.begin(), involved.end());
  st.behind.assign(behind.begin(), behind.end());
  st.since = since;
  for (const auto& k : keys) st.key += (st.key.empty() ? "" : "; ") + k;
  return {std::move(st)};
}

}  // namespace hangdx::live
