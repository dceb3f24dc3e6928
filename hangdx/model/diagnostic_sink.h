// hangdx/model/diagnostic_sink.h
// DiagnosticSink: the one place every layer reports a data problem (ingest
// while parsing, analyze when evidence contradicts itself, stacks, simulate).
// One policy for all, after LLVM's reportUniqueWarning:
//   - the same message about the same file is kept once, with a count
//     ("... (3 times)") instead of a line per repeat;
//   - at most `per_file_cap` distinct messages per file are kept; the rest
//     are counted and summarized in one line per file ("12 more problems in
//     this file not shown"), so a hostile file cannot flood the report;
//   - order is the order of first report, so output is deterministic when
//     each thread fills its own sink and the sinks are merged in file order.
//
//   DiagnosticSink sink;
//   sink.Add(Severity::kWarning, "rank_3.log", "line 7: timeout line not understood", 3, 512);
//   std::vector<Diagnostic> all = sink.Take();
//
// Not thread-safe: one sink per parser thread, merged with Merge().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::model {

class DiagnosticSink {
 public:
  static constexpr int kDefaultPerFileCap = 50;

  explicit DiagnosticSink(int per_file_cap = kDefaultPerFileCap) : cap_(per_file_cap) {}

  // Records `d` (see the policy above). Never fails.
  void Add(Diagnostic d);
  void Add(Diagnostic::Severity severity, std::string file, std::string message, Rank rank = -1,
           int64_t offset = -1) {
    Add(MakeDiagnostic(severity, std::move(file), std::move(message), rank, offset));
  }
  // Adds every diagnostic of `other` (in its order, with its counts and
  // drops) after the ones recorded here; `other` is left empty.
  void Merge(DiagnosticSink&& other);

  // Distinct diagnostics recorded (not counting repeats and drops).
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty() && dropped_.empty(); }
  // How many diagnostics about `file` were dropped by the cap.
  int64_t Dropped(const std::string& file) const;

  // The diagnostics in order of first report: a repeated one ends in
  // " (N times)"; each file past its cap gets one closing summary line.
  // The sink is left empty.
  std::vector<Diagnostic> Take();

 private:
  struct Item {
    Diagnostic d;
    int64_t times = 1;
  };
  int cap_;
  std::vector<Item> items_;
  std::map<std::pair<std::string, std::string>, size_t> index_;  // (file, message) -> items_
  std::map<std::string, int> kept_;                              // file -> distinct messages kept
  std::map<std::string, int64_t> dropped_;                       // file -> messages dropped
  std::map<std::string, Diagnostic::Severity> worst_dropped_;    // file -> worst severity dropped
};

}  // namespace hangdx::model
