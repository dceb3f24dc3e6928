// hangdx/live/first_look.h
// Which ranks of a large stall `hangdx watch` asks for their full records
// first, so that the finding comes within seconds of the stall whatever
// the job's size (docs/live.md, "The first look").
//
// At a stall the probe history already says, per rank and pg, the last
// enqueued and completed seq. Ranks with the same counters on every pg are
// one progress class; a hang's culprits are among the least progressed
// (Stall::behind). So the first look fetches the Flight Recorder and stacks
// of every rank behind, every silent rank, and the `per_class` lowest ranks
// of each class; the others enter the analysis by their counters alone
// (a wait state with "progress": docs/snapshot-format.md), which say that
// they reached a seq, never what they called. The full records of every
// rank are fetched after the finding, and analysed again.
//
//   std::vector<Rank> first = FirstLook(stall, progress_of, {});
//   if (first.empty()) ... fetch every rank of the stall, as for a small job
//
// Pure function; no I/O.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "hangdx/live/progress.h"
#include "hangdx/live/stall_detector.h"

namespace hangdx::live {

struct FirstLookOptions {
  // Stalls of at most this many ranks fetch everyone at once: they are
  // cheap, and every record is there for the first analysis.
  size_t whole_up_to = 64;
  // Ranks fetched from each progress class.
  size_t per_class = 4;
  // A first look of more ranks than this is no shortcut: fetch everyone.
  size_t max_ranks = 256;
};

// The ranks to fetch first for `stall` (sorted), or an empty list when
// every rank must be fetched before the analysis: a stall of at most
// `whole_up_to` ranks, a silent-rank stall, one without ranks behind (all
// at the same counters: the ops themselves must be compared, as for a
// mismatch), a rank of it whose counters are unknown (`progress_of` gives
// null or empty), or more than `max_ranks` to fetch.
std::vector<Rank> FirstLook(const Stall& stall, const std::function<const std::vector<PgProgress>*(Rank)>& progress_of,
                            const FirstLookOptions& options);

}  // namespace hangdx::live
