// hangdx/sim/fixes.h
// What-if search after a deadlock: changes of the program or the runtime
// that the field reports use as fixes, each simulated in full. A change is a
// fix when no explored interleaving of the changed job deadlocks.
//
//   auto found = sim::Explore(job);
//   if (found.ok() && found->deadlock)
//     for (const FixTrial& t : sim::SearchFixes(job, *found, options))
//       if (t.passes) printf("fix: %s\n", t.change.c_str());
//
// Candidates, in this order (docs/simulate.md):
//   queue_mode   the other host task queue modes (off, per_device, per_stream);
//   capacity     a pool that is full in the stuck state: the smallest larger
//                capacity on every rank that passes (up to the most ops of
//                one rank that use it, at most 8 tries);
//   no_hold      collectives and P2P ops (which wait on other ranks) do not
//                hold a unit of that pool (operator retry off);
//   order        every thread issues the ops of different pgs in one global
//                order: the order of the lowest rank, then of the highest;
//   parity       on odd ranks each send followed by its recv from the same
//                peer and pg becomes recv then send.
// A candidate that changes nothing is not tried. Queue-mode candidates need a
// schedule (nothing issued yet).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/model/device.h"
#include "hangdx/sim/simulator.h"

namespace hangdx::sim {

// One candidate change: what it is, and the changed job.
struct FixCandidate {
  std::string kind;    // "queue_mode", "capacity", "no_hold", "order", "parity"
  std::string change;  // in words: "task queue mode per_stream (now per_device)"
  model::DeviceJob job;
};

// One simulated candidate.
struct FixTrial {
  std::string kind;
  std::string change;
  bool passes = false;         // no explored interleaving deadlocks
  bool bound_reached = false;  // passes only within the bound
  int64_t states = 0;
  double seconds = 0;
};

// The candidates for `job`, given the stuck state `stuck` of a deadlock
// found in it (pools full there are the ones tried). Capacity candidates
// are not listed here (SearchFixes tries them one by one); everything else
// is. Never fails.
std::vector<FixCandidate> FixCandidates(const model::DeviceJob& job, const model::DeviceJob& stuck);

// Simulates every candidate with `options` and the capacity series of each
// full pool (stopping at the first capacity that passes). All trials
// together get options.max_seconds; those left when it runs out are not
// tried. Returns every trial, passing or not, in the order of the header
// comment. Candidates the simulator refuses or that found no time are left
// out; `untried`, when given, is increased by the number that found no time.
std::vector<FixTrial> SearchFixes(const model::DeviceJob& job, const ExploreResult& deadlock,
                                  const ExploreOptions& options, int* untried = nullptr);

}  // namespace hangdx::sim
