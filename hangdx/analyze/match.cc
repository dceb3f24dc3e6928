#include "hangdx/analyze/match.h"

#include <set>

namespace hangdx::analyze {

const char* MatchStateName(MatchState s) {
  switch (s) {
    case MatchState::kFullyMatched:
      return "FULLY_MATCHED";
    case MatchState::kTypeMismatch:
      return "COLLECTIVE_TYPE_MISMATCH";
    case MatchState::kSizeMismatch:
      return "SIZE_OR_SYNTAX_MISMATCH";
    case MatchState::kDtypeMismatch:
      return "COLLECTIVE_DTYPE_MISMATCH";
    case MatchState::kStateMismatch:
      return "COLLECTIVE_STATE_MISMATCH";
    case MatchState::kUndecided:
      return "UNDECIDED";
  }
  return "?";
}

bool IsAllToAll(std::string_view op) {
  return op == "all_to_all" || op == "all_to_all_single" || op == "all_to_all_v_single" || op == "alltoall" ||
         op == "alltoall_base";
}

namespace {

// Which sides must agree across ranks: inputs are root-only for scatter,
// outputs root-only for gather; all_to_all sizes may differ by rank.
bool CompareInputs(std::string_view op) { return op != "scatter" && !IsAllToAll(op); }
bool CompareOutputs(std::string_view op) { return op != "gather" && !IsAllToAll(op); }
bool InplaceSameSize(std::string_view op) {
  return op == "all_reduce" || op == "allreduce" || op == "allreduce_coalesced";
}

std::string ShapesText(const std::vector<model::Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i) s += ", ";
    s += "[";
    for (size_t k = 0; k < shapes[i].size(); ++k) {
      if (k) s += ", ";
      s += std::to_string(shapes[i][k]);
    }
    s += "]";
  }
  return s + "]";
}

std::string DtypesText(const std::vector<std::string>& d) {
  std::set<std::string> set(d.begin(), d.end());
  set.erase("");
  std::string s;
  for (const auto& x : set) s += (s.empty() ? "" : ",") + x;
  return s;
}

bool AllEmpty(const std::vector<model::Shape>& s) {
  for (const auto& x : s)
    if (!x.empty()) return false;
  return true;
}

}  // namespace

std::string Signature(const model::OpRecord& op) {
  std::string s(op.op);
  if (op.is_p2p) return s;
  if (CompareInputs(op.op)) s += " in=" + ShapesText(op.input_sizes);
  if (CompareOutputs(op.op)) s += " out=" + ShapesText(op.output_sizes);
  std::string din = CompareInputs(op.op) ? DtypesText(op.input_dtypes) : "";
  std::string dout = CompareOutputs(op.op) ? DtypesText(op.output_dtypes) : "";
  if (!din.empty() || !dout.empty()) s += " " + (din == dout || dout.empty() ? din : din + "->" + dout);
  return s;
}

MatchState MatchOps(const model::OpRecord& a, const model::OpRecord& b) {
  if (a.op == "send" || a.op == "recv") {
    bool pair = (a.op == "send" && b.op == "recv") || (a.op == "recv" && b.op == "send");
    if (!pair) return MatchState::kTypeMismatch;
    const auto& sa = a.op == "send" ? a.input_sizes : a.output_sizes;
    const auto& sb = b.op == "send" ? b.input_sizes : b.output_sizes;
    // The sender's (self, peer) is the receiver's (peer, self).
    bool ends = a.p2p_self_local == b.p2p_peer_local && a.p2p_peer_local == b.p2p_self_local;
    return ends && sa == sb ? MatchState::kFullyMatched : MatchState::kSizeMismatch;
  }
  if (a.op != b.op) return MatchState::kTypeMismatch;
  std::string_view op = a.op;
  if (CompareInputs(op) && a.input_sizes != b.input_sizes) return MatchState::kSizeMismatch;
  if (CompareOutputs(op)) {
    // gather/scatter non-roots record [[]] outputs: not a disagreement.
    if (a.output_sizes != b.output_sizes && !AllEmpty(a.output_sizes) && !AllEmpty(b.output_sizes))
      return MatchState::kSizeMismatch;
  }
  if (InplaceSameSize(op) && (a.input_sizes != a.output_sizes || b.input_sizes != b.output_sizes))
    return MatchState::kSizeMismatch;
  auto dset = [](const std::vector<std::string>& d) {
    std::set<std::string> s(d.begin(), d.end());
    s.erase("");
    return s;
  };
  if (CompareInputs(op) && !a.input_dtypes->empty() && !b.input_dtypes->empty() &&
      dset(a.input_dtypes) != dset(b.input_dtypes) && !dset(b.input_dtypes).empty() && !dset(a.input_dtypes).empty())
    return MatchState::kDtypeMismatch;
  if (CompareOutputs(op) && !dset(a.output_dtypes).empty() && !dset(b.output_dtypes).empty() &&
      dset(a.output_dtypes) != dset(b.output_dtypes))
    return MatchState::kDtypeMismatch;
  if (a.state != b.state) return MatchState::kStateMismatch;
  if (IsAllToAll(op)) return MatchState::kUndecided;
  return MatchState::kFullyMatched;
}

}  // namespace hangdx::analyze
