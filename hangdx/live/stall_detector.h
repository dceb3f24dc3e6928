// hangdx/live/stall_detector.h
// StallDetector: decides from successive progress reports when a job has
// stopped. A pg is stalled when one of its members has an op enqueued and
// not completed (the pg has an unfinished seq) and no member's counters
// moved for `stall_after`. A job that is slow but progressing moves
// them, so it never stalls. A rank that answered before and has not
// answered for `stall_after` while other ranks still answer is a stall
// too (dead or wedged: gloo ranks whose peer died fail their op and count
// it completed, so their counters alone would show nothing); every rank
// silent means the job is gone, not stalled.
//
//   StallDetector d({.stall_after = std::chrono::seconds(30)});
//   d.Observe(3, now, progress.pgs);       // each probe or push
//   d.Unanswered(5, now);                  // each probe that got no answer
//   for (const Stall& s : d.Check(now)) ... fetch details from s.ranks ...
//
// Each stall is reported once per episode: it ends when some member
// advances again (then a new stall is a new episode). Time is passed in,
// never read, so tests drive it. Not thread-safe (the Watcher locks).
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hangdx/live/progress.h"

namespace hangdx::live {

using Clock = std::chrono::steady_clock;

struct StallOptions {
  Clock::duration stall_after = std::chrono::seconds(30);
};

struct Stall {
  enum class Reason { kNoProgress, kSilentRank };
  Reason reason = Reason::kNoProgress;
  std::vector<std::string> pgs;  // the pgs that stopped (kNoProgress), or the silent rank's pgs
  std::vector<Rank> ranks;       // every member of those pgs: where details are fetched
  std::vector<Rank> behind;      // members with the least completed (kNoProgress)
  std::vector<Rank> silent;      // ranks that stopped answering
  Clock::time_point since;       // the last progress (or answer) before the stall
  std::string key;               // names the episode, stable across restarts with the same history
};

// Per pg, for /status and the probe history.
struct PgState {
  std::string pg;
  std::vector<Rank> members;
  int64_t min_completed = -1, max_completed = -1, max_enqueued = -1;
  std::vector<Rank> behind;  // members at min_completed while some member is further
  bool unfinished = false, stalled = false;
  Clock::time_point last_change;
};

class StallDetector {
 public:
  explicit StallDetector(StallOptions options) : opt_(options) {}

  // A successful report of `rank` at `now` (probe reply or push).
  void Observe(Rank rank, Clock::time_point now, const std::vector<PgProgress>& pgs);
  // Members that pg_config lists for `pg` (added to those seen reporting it).
  void AddMembers(const std::string& pg, const std::vector<Rank>& ranks);
  // A probe of `rank` that got no answer in time.
  void Unanswered(Rank rank, Clock::time_point now);
  // Restores what a previous watch knew (state store resume): the rank's
  // last counters, when they last changed and when it last answered.
  void Restore(Rank rank, const std::vector<PgProgress>& pgs, Clock::time_point changed, Clock::time_point seen);
  // Marks episode `key` as already reported (resume: no finding repeated).
  void MarkReported(const std::string& key) { reported_.insert(key); }

  // The stalls that began an episode since the last call, most ranks first.
  // O(ranks): asked at the end of a round, or when Due says so.
  std::vector<Stall> Check(Clock::time_point now);
  // True, once per pg and quiet spell, when some pg's last change is
  // `stall_after` or more before `now`: the moment a Check may find a new
  // no-progress stall. O(1) but when true (then O(pgs)), so a prober asks
  // it at every answer and declares a stall at the answer that crosses
  // `stall_after` instead of at the end of its round (docs/live.md, 4a).
  bool Due(Clock::time_point now);
  // Every pg now, sorted by pg id.
  std::vector<PgState> Pgs(Clock::time_point now) const;

  size_t ranks_seen() const { return ranks_.size(); }
  // Ranks that answered (or pushed) at least once; O(ranks).
  size_t ranks_answered() const;
  // Ranks that answered once and not for `stall_after` (or never, when asked).
  std::vector<Rank> Silent(Clock::time_point now) const;
  // True when every rank seen has been silent for `stall_after`: the job ended.
  bool JobGone(Clock::time_point now) const;
  // The last counters `rank` reported, empty when none.
  std::vector<PgProgress> Last(Rank rank) const;
  // When `rank` last answered / last changed a counter (epoch when never).
  Clock::time_point LastSeen(Rank rank) const;
  Clock::time_point LastChange(Rank rank) const;

 private:
  struct RankState {
    std::map<std::string, PgProgress> pgs;
    Clock::time_point seen, changed;
    bool answered = false;
  };
  struct Pg {
    std::set<Rank> members;
    Clock::time_point last_change;
    Clock::time_point due_said = Clock::time_point::min();  // the last_change Due said was due
  };
  // Due is asked again no later than `t` (a pg's last change + stall_after).
  void DueBy(Clock::time_point t) { next_due_ = std::min(next_due_, t); }

  bool Stalled(const std::string& id, const Pg& pg, Clock::time_point now) const;

  StallOptions opt_;
  std::map<Rank, RankState> ranks_;
  std::map<std::string, Pg> pgs_;
  std::set<std::string> reported_;
  Clock::time_point next_due_ = Clock::time_point::min();  // Due has nothing to say before this
};

}  // namespace hangdx::live
