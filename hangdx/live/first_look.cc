#include "hangdx/live/first_look.h"

#include <algorithm>
#include <map>
#include <set>

namespace hangdx::live {

std::vector<Rank> FirstLook(const Stall& stall, const std::function<const std::vector<PgProgress>*(Rank)>& progress_of,
                            const FirstLookOptions& options) {
  if (stall.reason != Stall::Reason::kNoProgress || stall.ranks.size() <= options.whole_up_to || stall.behind.empty())
    return {};
  std::set<Rank> first(stall.behind.begin(), stall.behind.end());
  first.insert(stall.silent.begin(), stall.silent.end());
  // Classes by the whole counter vector (every pg of the rank), in rank
  // order: the lowest ranks of each are its sample.
  std::map<std::vector<PgProgress>, size_t> taken;
  std::vector<Rank> ranks = stall.ranks;
  std::sort(ranks.begin(), ranks.end());
  for (Rank r : ranks) {
    const std::vector<PgProgress>* p = progress_of(r);
    if (!p || p->empty()) return {};
    std::vector<PgProgress> key = *p;
    std::sort(key.begin(), key.end());
    size_t& n = taken.try_emplace(std::move(key), 0).first->second;
    if (n < options.per_class) {
      first.insert(r);
      ++n;
    }
    if (first.size() > options.max_ranks) return {};
  }
  return {first.begin(), first.end()};
}

}  // namespace hangdx::live
