// hangdx/analyze/match.h
// Comparing one rank's record of a collective with another's, by the rules
// PyTorch's analyzer uses (torch/distributed/flight_recorder/components/
// types.py, Op.match), with its flaws fixed: the comparison is symmetric, and
// sizes compared per op kind (gather/scatter roots, all_to_all).
#pragma once

#include <string>

#include "hangdx/model/job.h"

namespace hangdx::analyze {

enum class MatchState {
  kFullyMatched,
  kTypeMismatch,
  kSizeMismatch,
  kDtypeMismatch,
  kStateMismatch,
  kUndecided,  // all_to_all: per-rank sizes legitimately differ
};
const char* MatchStateName(MatchState s);

// Compares two records of what should be the same operation. For send/recv:
// a send matches a recv with the same pair and equal sizes. Pure function.
MatchState MatchOps(const model::OpRecord& a, const model::OpRecord& b);

// The part of an op that must agree across ranks, as one comparable string
// (op name, and the sizes and dtypes that must be equal for that op).
// Ranks whose records give the same signature agree.
std::string Signature(const model::OpRecord& op);

// True for a record that names no op kind (neither op nor profiling name):
// a rank known by its progress counters alone (a `hangdx watch` wait state
// with "progress") says that it reached this seq, not what it called. It
// agrees with any record; an instance takes its op from the others.
inline bool KindUnknown(const model::OpRecord& op) { return op.op.empty() && op.profiling_name.empty() && !op.is_p2p; }

// True for ops whose per-rank sizes may legitimately differ.
bool IsAllToAll(std::string_view op);

}  // namespace hangdx::analyze
