// hangdx/sim/candidates.h
// The simulator's bookkeeping of which parts of a job may move, so that a
// step of the search costs what it changed, not a scan of every stream,
// queue and thread (a 32,768-rank schedule with nothing to explore took
// minutes, quadratic in the ranks).
//
//   Candidates c(streams, queues, threads);    // all of them, at first
//   for (int32_t st = c.Of(Candidates::kStream).Next(0); st >= 0;
//        st = c.Of(Candidates::kStream).Next(st + 1)) { ... c.Drop(Candidates::kStream, st); }
//   size_t mark = c.TrailSize();  c.Add(Candidates::kQueue, 3);  c.Undo(mark);
//
// The contract (kept by simulator.cc): every stream, queue and thread that
// has a transition in the current state is a member of its set; members may
// have none (the search drops them when it finds so). Changes are recorded
// so that the depth-first search can take the sets back with the state.
// Internal to hangdx_sim; not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hangdx::sim {

// A set of the integers 0..n-1 that finds its next member in order in
// O(log_64 n): a bitset under summary levels (bit j of level k+1 says word j
// of level k is not empty).
class IdSet {
 public:
  explicit IdSet(size_t n = 0) {
    size_t words = (n + 63) / 64;
    do {
      levels_.emplace_back(words == 0 ? 1 : words, 0);
      words = (words + 63) / 64;
    } while (levels_.back().size() > 1);
  }
  bool Contains(int32_t i) const { return (levels_[0][static_cast<size_t>(i) >> 6] >> (i & 63)) & 1; }
  void Insert(int32_t i) {
    size_t x = static_cast<size_t>(i);
    for (auto& level : levels_) {
      uint64_t& w = level[x >> 6];
      const bool had = w != 0;
      w |= uint64_t{1} << (x & 63);
      if (had) return;
      x >>= 6;
    }
  }
  void Erase(int32_t i) {
    size_t x = static_cast<size_t>(i);
    for (auto& level : levels_) {
      uint64_t& w = level[x >> 6];
      w &= ~(uint64_t{1} << (x & 63));
      if (w != 0) return;
      x >>= 6;
    }
  }
  // The smallest member >= i, or -1 when there is none.
  int32_t Next(int32_t i) const {
    size_t k = 0, x = static_cast<size_t>(i);
    for (;; ++k) {  // climb while the rest of x's word is empty
      if (k == levels_.size() || (x >> 6) >= levels_[k].size()) return -1;
      const uint64_t w = levels_[k][x >> 6] & (~uint64_t{0} << (x & 63));
      if (w != 0) {
        x = (x & ~size_t{63}) | static_cast<size_t>(__builtin_ctzll(w));
        break;
      }
      x = (x >> 6) + 1;  // the next word at this level is the next bit one level up
    }
    while (k-- > 0) x = (x << 6) | static_cast<size_t>(__builtin_ctzll(levels_[k][x]));
    return static_cast<int32_t>(x);
  }

 private:
  std::vector<std::vector<uint64_t>> levels_;
};

// The four sets of the search: streams whose head may start or finish,
// queues whose dispatcher may move, threads whose host_sync may return, and
// threads that may issue. Undoable.
class Candidates {
 public:
  enum Kind : uint8_t { kStream, kQueue, kSync, kIssue };

  Candidates(size_t streams, size_t queues, size_t threads)
      : sets_{IdSet(streams), IdSet(queues), IdSet(threads), IdSet(threads)} {
    const size_t n[4] = {streams, queues, threads, threads};
    for (int k = 0; k < 4; ++k) {
      for (size_t i = 0; i < n[k]; ++i) sets_[k].Insert(static_cast<int32_t>(i));
    }
  }
  const IdSet& Of(Kind k) const { return sets_[k]; }
  void Add(Kind k, int32_t i) {
    if (sets_[k].Contains(i)) return;
    sets_[k].Insert(i);
    trail_.push_back({k, true, i});
  }
  void Drop(Kind k, int32_t i) {
    if (!sets_[k].Contains(i)) return;
    sets_[k].Erase(i);
    trail_.push_back({k, false, i});
  }
  size_t TrailSize() const { return trail_.size(); }
  size_t TrailBytes() const { return trail_.capacity() * sizeof(Change); }
  // Forgets the record (nothing before now will be undone).
  void ClearTrail() { trail_.clear(); }
  // Takes every Add and Drop after the first `len` recorded back.
  void Undo(size_t len) {
    while (trail_.size() > len) {
      const Change& c = trail_.back();
      if (c.added)
        sets_[c.kind].Erase(c.id);
      else
        sets_[c.kind].Insert(c.id);
      trail_.pop_back();
    }
  }

 private:
  struct Change {
    Kind kind;
    bool added;
    int32_t id;
  };
  std::array<IdSet, 4> sets_;
  std::vector<Change> trail_;
};

}  // namespace hangdx::sim
