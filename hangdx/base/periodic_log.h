// hangdx/base/periodic_log.h
// PeriodicLog<T>: a sequence of small items that mostly repeats with some
// period (a training loop's step: the same few collectives, the same line
// and seq deltas), stored as one period and the items that break it. Items
// are pushed one at a time and never held all at once: the period is
// chosen from the first kChooseFrom items, and after that each item is
// compared with the one a period earlier. Memory is O(period + items that
// differ from the item a period before), lossless.
//
//   PeriodicLog<Delta> log;
//   for (...) log.Push(d);
//   log.Seal();                               // done pushing: frees the push state
//   log.ForEach([&](const Delta& d) { ... });  // in push order
//
// T: trivially copyable, with operator==. Not thread-safe while pushing;
// a sealed log may be read from several threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hangdx {

template <typename T>
class PeriodicLog {
 public:
  // Items looked at to choose the period.
  static constexpr size_t kChooseFrom = 4096;

  // Appends `item`. O(1) amortized.
  void Push(const T& item);
  // Ends pushing: chooses the period of a log shorter than kChooseFrom and
  // frees what pushing needed. Push must not be called after.
  void Seal();
  // Calls f(const T&) for each item, in push order. Valid before and after Seal.
  template <typename F>
  void ForEach(F f) const;

  size_t size() const { return size_; }
  // Bytes held.
  size_t MemoryBytes() const {
    return sizeof(*this) + (first_.capacity() + base_.capacity() + ring_.capacity()) * sizeof(T) +
           exceptions_.capacity() * sizeof(exceptions_[0]);
  }

 private:
  // The period of `items`: the candidate distance (from a few sample
  // items to the next items equal to them) under which most items repeat;
  // items.size() when none does.
  static size_t ChoosePeriod(const std::vector<T>& items);
  // Sets the period from first_ and stores first_ as base and exceptions.
  void Settle();

  size_t size_ = 0, period_ = 0;  // period_ 0: not chosen yet (the items are first_)
  std::vector<T> first_;          // until the period is chosen
  std::vector<T> base_;           // the first period
  std::vector<T> ring_;           // while pushing: the last period_ items
  std::vector<std::pair<uint32_t, T>> exceptions_;  // (index, item): items unlike the one a period before
};

template <typename T>
size_t PeriodicLog<T>::ChoosePeriod(const std::vector<T>& items) {
  const size_t n = items.size();
  if (n < 16) return std::max<size_t>(n, 1);
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

template <typename T>
void PeriodicLog<T>::Settle() {
  period_ = ChoosePeriod(first_);
  base_.assign(first_.begin(), first_.begin() + std::min(period_, first_.size()));
  ring_ = base_;
  for (size_t k = period_; k < first_.size(); ++k) {
    T& was = ring_[k % period_];
    if (!(first_[k] == was)) exceptions_.emplace_back(static_cast<uint32_t>(k), first_[k]);
    was = first_[k];
  }
  std::vector<T>().swap(first_);
}

template <typename T>
void PeriodicLog<T>::Push(const T& item) {
  size_t i = size_++;
  if (period_ == 0) {
    first_.push_back(item);
    if (first_.size() == kChooseFrom) Settle();
    return;
  }
  T& was = ring_[i % period_];
  if (!(item == was)) {
    exceptions_.emplace_back(static_cast<uint32_t>(i), item);
    was = item;
  }
}

template <typename T>
void PeriodicLog<T>::Seal() {
  if (period_ == 0 && !first_.empty()) Settle();
  std::vector<T>().swap(ring_);
  exceptions_.shrink_to_fit();
}

template <typename T>
template <typename F>
void PeriodicLog<T>::ForEach(F f) const {
  if (period_ == 0) {
    for (const T& item : first_) f(item);
    return;
  }
  std::vector<T> ring(base_.begin(), base_.end());
  size_t next = 0;
  for (size_t i = 0; i < size_; ++i) {
    T& slot = ring[i % period_];
    if (next < exceptions_.size() && exceptions_[next].first == i) slot = exceptions_[next++].second;
    f(static_cast<const T&>(slot));
  }
}

}  // namespace hangdx
