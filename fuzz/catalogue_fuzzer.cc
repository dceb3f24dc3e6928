// Fuzzes the message catalogue's own parser and interpreter
// (hangdx/ingest/messages): an input is a catalogue file (data/*.msgs
// syntax, catalogue.h) that Catalogue::Parse must accept or refuse with an
// error naming the line; an accepted one is compiled and each row's tests
// run through a matcher over it (CheckRow: block rows, continuations, the
// capture normalizations). The same bytes are also fed as log lines to the
// built-in catalogue's matcher, as the messages format does. Never a crash,
// a hang or a leak. scripts/fuzz.sh runs it on the catalogue's own files.
#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/ingest/logs/line_util.h"
#include "hangdx/ingest/messages/catalogue.h"
#include "hangdx/ingest/messages/matcher.h"

using hangdx::ingest::messages::Catalogue;
using hangdx::ingest::messages::CompiledCatalogue;
using hangdx::ingest::messages::MessageMatch;
using hangdx::ingest::messages::MessageMatcher;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto catalogue = Catalogue::Parse(text, "fuzz.msgs");
  if (catalogue.ok() && catalogue->rows().size() <= 64) {
    CompiledCatalogue compiled(*catalogue);
    for (const auto& row : catalogue->rows()) hangdx::ingest::messages::CheckRow(compiled, row);
  }
  MessageMatcher matcher(CompiledCatalogue::Builtin());
  std::vector<MessageMatch> out;
  hangdx::ingest::logs::LineReader reader(text);
  for (hangdx::ingest::logs::Line l; reader.Next(&l);) {
    matcher.Feed(l, &out);
    out.clear();
  }
  matcher.Finish(&out);
  return 0;
}
