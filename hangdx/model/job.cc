#include "hangdx/model/job.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace hangdx::model {

const RankDump* Job::Find(Rank r) const {
  // Dumps are sorted and unique by rank: when they hold every rank from 0
  // (a wait snapshot of the whole job), rank r is at r; no search.
  if (r >= 0 && static_cast<size_t>(r) < dumps.size() && dumps[static_cast<size_t>(r)].rank == r)
    return &dumps[static_cast<size_t>(r)];
  auto it = std::lower_bound(dumps.begin(), dumps.end(), r, [](const RankDump& d, Rank x) { return d.rank < x; });
  return it != dumps.end() && it->rank == r ? &*it : nullptr;
}

bool Job::LeftAFile(Rank r) const {
  return std::any_of(file_reads.begin(), file_reads.end(),
                     [r](const FileRead& f) { return f.rank == r && f.bytes > 0; });
}

namespace {
bool ParseInt(std::string_view s, int64_t* v) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}
}  // namespace

std::string_view Interner::Str(std::string_view s) {
  auto it = strings_.find(s);
  if (it == strings_.end()) it = strings_.emplace(s).first;
  return *it;
}

std::string_view Interner::StrFromBuffer(std::string_view s) {
  if (cache_.empty()) cache_.resize(kCacheSlots);
  size_t h = (reinterpret_cast<uintptr_t>(s.data()) >> 3) ^ s.size();
  Slot& slot = cache_[h & (cache_.size() - 1)];
  if (slot.data == s.data() && slot.size == s.size() && s.data()) return slot.value;
  auto it = strings_.find(s);
  if (it == strings_.end()) it = strings_.emplace(s).first;
  slot = {s.data(), s.size(), *it};
  return *it;
}

void ParseProfilingName(OpRecord* op) {
  std::string_view name = op->profiling_name;
  size_t colon = name.find(':');
  std::string_view rest = name;
  if (colon != std::string_view::npos) {
    op->backend = name.substr(0, colon);
    rest = name.substr(colon + 1);
  }
  size_t space = rest.find(' ');
  op->op = rest.substr(0, space);
  if (space == std::string_view::npos) return;
  std::string_view meta = rest.substr(space + 1);
  // "send 0->1": self 0 sends to peer 1; "recv 1<-0": self 1 receives from 0.
  size_t arrow = meta.find("->");
  if (arrow == std::string_view::npos) arrow = meta.find("<-");
  if (arrow == std::string_view::npos) return;
  int64_t a = -1, b = -1;
  if (ParseInt(meta.substr(0, arrow), &a) && ParseInt(meta.substr(arrow + 2), &b) && a >= 0 && b >= 0 &&
      a < (int64_t{1} << 30) && b < (int64_t{1} << 30)) {
    op->p2p_self_local = static_cast<int32_t>(a);
    op->p2p_peer_local = static_cast<int32_t>(b);
  }
}

int64_t Numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return 0;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

}  // namespace hangdx::model
