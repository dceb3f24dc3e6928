// hangdx/model/name_index.h
// NameIndex: pg name -> small int, for the per-dump lookups the analysis
// makes once per op (the group of an op's pg, the history index of a pg).
// A dump records a handful of pgs, so a short list compared by address
// first (views of one dump's interner share it) is the fastest; a job with
// thousands of new_groups (MoE sub-groups, tester's 10,000-pg dumps) made
// that scan O(ops x pgs), so past kLinear names a hash map answers instead.
//
//   NameIndex idx;
//   idx.Insert(pg.name, 3);        // first insertion of a name wins
//   int v = idx.Find(op.pg_name);  // -1 when absent
//
// The views must outlive the index (they are not copied).
#pragma once

#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hangdx::model {

class NameIndex {
 public:
  // Names up to this count are found by a linear scan.
  static constexpr size_t kLinear = 8;

  // Maps `name` to `value` unless `name` is already present. Returns the
  // value `name` maps to after the call.
  int Insert(std::string_view name, int value) {
    if (int old = Find(name); old >= 0) return old;
    list_.emplace_back(name, value);
    if (!map_.empty()) {
      map_.emplace(name, value);
    } else if (list_.size() > kLinear) {
      map_.reserve(list_.size() * 2);
      for (const auto& [n, v] : list_) map_.emplace(n, v);
    }
    return value;
  }

  // The value of `name`, -1 when absent. O(1) on average.
  int Find(std::string_view name) const {
    if (!map_.empty()) {
      auto it = map_.find(name);
      return it == map_.end() ? -1 : it->second;
    }
    for (const auto& [n, v] : list_)
      if (n.data() == name.data() || n == name) return v;
    return -1;
  }

  // Names in insertion order, with their values.
  const std::vector<std::pair<std::string_view, int>>& entries() const { return list_; }

 private:
  std::vector<std::pair<std::string_view, int>> list_;
  std::unordered_map<std::string_view, int> map_;  // filled once list_ passes kLinear
};

}  // namespace hangdx::model
