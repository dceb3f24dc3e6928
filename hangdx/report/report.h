// hangdx/report/report.h
// Renderers of a Diagnosis: a short human report, the stable JSON document
// (schema in docs/json-schema.md, versioned by "schema_version"), and
// Graphviz DOT of the rank-level wait-for graph; and of the merged stacks.
// Renderers only format; every JSON document is written by WriteJson
// (json_writer.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/analyze/stacks.h"

namespace hangdx::report {

inline constexpr int kSchemaVersion = 1;        // analyze's JSON document
inline constexpr int kStacksSchemaVersion = 2;  // stacks' (2: a flat list of nodes, not a nested tree)

// The text policy of every human report: text from the inputs may hold
// control characters (a profiling name with "\x1b[2J" or "\n") or bytes
// that are not UTF-8 (a corrupt dump); each such byte becomes '?', so a
// report keeps its lines, cannot drive the terminal, and stays valid UTF-8.
// Tabs and well-formed UTF-8 are kept.
std::string Printable(std::string_view s);

// The human report. Its first line is the verdict in one sentence; rank sets
// print as ranges. `max_findings` caps the findings shown in full.
std::string RenderText(const analyze::Diagnosis& d, size_t max_findings = 8);

// The JSON document (see docs/json-schema.md). Deterministic key order.
nlohmann::ordered_json ToJson(const analyze::Diagnosis& d);
// One finding as the JSON schema writes it (docs/json-schema.md): kind,
// severity, hang, summary, pg, seq, op, culprit_ranks, roles, cycle,
// blocked_behind, details, evidence, fix_hint. Shared by every JSON report.
nlohmann::ordered_json FindingToJson(const analyze::Finding& f);
std::string RenderJson(const analyze::Diagnosis& d);

// Graphviz DOT: one node per rank involved, one edge per wait (label: the op
// waited in); edges of a cycle red, culprit ranks filled.
std::string RenderDot(const analyze::Diagnosis& d);

// The merged stack tree, compactly: one line per branch point, a chain of
// frames that the same ranks share folded into one line ("a > b > c"), each
// line with its ranks as ranges. The smaller classes are the odd ones out.
std::string RenderStacksText(const analyze::StackTree& t);
// The stacks document (docs/json-schema.md, "hangdx stacks"): the tree as a
// flat list of nodes, each a folded chain of frames with its ranks, parent
// and children; the ranks without a stack, with a cut stack, unreadable; the
// diagnostics.
nlohmann::ordered_json StacksToJson(const analyze::StackTree& t);
std::string RenderStacksJson(const analyze::StackTree& t);  // WriteJson(StacksToJson(t))

}  // namespace hangdx::report
