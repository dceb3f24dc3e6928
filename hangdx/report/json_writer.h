// hangdx/report/json_writer.h
// The one way hangdx writes a JSON document (analyze, stacks and simulate
// all do): two-space indent, keys in the order the renderer added them, a
// trailing newline, and one UTF-8 policy for text that came from the inputs
// (a frame name, a profiling name, a file name of a corrupt dump): every byte
// sequence that is not UTF-8 becomes U+FFFD, so the document is always valid
// JSON and writing it never throws.
//
//   nlohmann::ordered_json j;
//   j["frame"] = std::string("bad \xff byte");
//   std::string text = report::WriteJson(j);  // "{\n  \"frame\": \"bad \uFFFD byte\"\n}\n" (as UTF-8)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hangdx::report {

// `doc` as text (see above). Never fails.
std::string WriteJson(const nlohmann::ordered_json& doc);

}  // namespace hangdx::report
