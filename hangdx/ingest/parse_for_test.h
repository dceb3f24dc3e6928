// hangdx/ingest/parse_for_test.h
// For the tests of formats: runs one format's parse function on a string
// and returns what it recorded, in one line.
//
//   std::vector<model::Diagnostic> diags;
//   auto dumps = ParseForTest(ParseNcclLog, text, /*rank_hint=*/3, &diags).dumps;
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {

// Parses `data` (named `file`, rank hint `rank_hint`) with `parse` into a
// DumpBuilder and returns DumpBuilder::Finish(). *diags (when given)
// receives the diagnostics, *ok (when given) what `parse` returned.
inline DumpBuilder::Result ParseForTest(bool (*parse)(const Artifact&, RecordSink*), std::string_view data,
                                        int64_t rank_hint = -1, std::vector<model::Diagnostic>* diags = nullptr,
                                        const std::string& file = "f", bool* ok = nullptr) {
  model::DiagnosticSink sink;
  DumpBuilder out(file, &sink);
  bool r = parse(Artifact{data, file, rank_hint}, &out);
  if (ok) *ok = r;
  DumpBuilder::Result result = out.Finish();
  std::vector<model::Diagnostic> all = sink.Take();
  if (diags) diags->insert(diags->end(), all.begin(), all.end());
  return result;
}

}  // namespace hangdx::ingest
