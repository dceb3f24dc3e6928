// Fuzzes the input formats of hangdx/ingest/formats.h, driven by the table:
// with HANGDX_FUZZ_FORMAT=<name> (a row of `hangdx formats`) that format's
// parser reads every input, past the sniffing, so it sees inputs no sniff
// would hand it; without it, an input goes the loader's way (ReadArtifact:
// sniffing, text decoding, one exclusive format or every text format).
// Either way any input must give records or diagnostics, never a crash, a
// hang or a leak. scripts/fuzz.sh runs one process per row (it gets the rows
// from HANGDX_FUZZ_FORMAT=list) and one without.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hangdx/ingest/formats.h"

namespace {

const hangdx::ingest::Format* g_format = nullptr;  // null: the loader's path

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("HANGDX_FUZZ_FORMAT");
  if (name && std::string(name) == "list") {  // for scripts/fuzz.sh: one format name a line
    for (const auto& f : hangdx::ingest::Formats())
      std::printf("%.*s\n", static_cast<int>(f.name.size()), f.name.data());
    std::exit(0);
  }
  if (name && *name) {
    g_format = hangdx::ingest::FindFormat(name);
    if (!g_format) {
      std::fprintf(stderr, "HANGDX_FUZZ_FORMAT=%s is not a format (%s)\n", name, hangdx::ingest::FormatNames().c_str());
      std::exit(2);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of its own: the parsers must not read past `size`.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  hangdx::model::DiagnosticSink diags;
  hangdx::ingest::DumpBuilder out("fuzz", &diags);
  hangdx::ingest::Artifact in{bytes, "fuzz", size % 3 == 0 ? -1 : 5};
  if (g_format)
    g_format->parse(in, &out);
  else
    hangdx::ingest::ReadArtifact(in, &out);
  out.Finish();
  diags.Take();
  return 0;
}
