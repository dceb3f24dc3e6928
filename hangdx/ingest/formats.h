// hangdx/ingest/formats.h
// The input formats hangdx reads, as a table: one row per format in
// formats.cc, the only list of formats. The loader (which format reads a
// file), the fuzzer (fuzz/format_fuzzer.cc), `hangdx formats`, the CLI help,
// the skip message, the Python docstring and the README's list (checked by
// tests/cli_test.sh) all read it.
//
//   for (const Format& f : Formats()) std::cout << f.name << "  " << f.description << "\n";
//   const Format* f = FindFormat(kNcclLog);
//   f->parse(Artifact{text, "rank_3.log", 3}, &sink);
//
// A format is sniffed from a file's content, never its name. Exclusive
// formats (binary and JSON documents) claim a whole file: the most
// confident one reads it. Text formats share a file: a rank's stderr mixes
// NCCL lines, c10d messages and a Python traceback, so every text format
// that recognizes the text reads it, in table order, into one RecordSink.
//
// To add a format: a folder formats/<name>/ with <name>.{h,cc} (a Sniff and
// a Parse function with the signatures below, the upstream producer cited
// in the header), <name>_test.cc and testdata/; one row in formats.cc; one
// hangdx_format(<name>) line in ingest/CMakeLists.txt; the README's list
// (`hangdx formats` prints it).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {

// Format names: what `hangdx formats` lists; constants, never repeated as
// literals.
inline constexpr std::string_view kFrPickle = "fr-pickle";
inline constexpr std::string_view kFrJson = "fr-json";
inline constexpr std::string_view kWaitSnapshot = "wait-snapshot";
inline constexpr std::string_view kDeviceJson = "device-json";
inline constexpr std::string_view kNcclRas = "nccl-ras";
inline constexpr std::string_view kNcclLog = "nccl-log";
inline constexpr std::string_view kTorchLog = "torch-log";
inline constexpr std::string_view kHcclPlog = "hccl-plog";
inline constexpr std::string_view kStackDump = "stack-dump";
inline constexpr std::string_view kMessages = "messages";

// One input format.
struct Format {
  enum class Kind {
    kExclusive,  // a binary or JSON document: the most confident exclusive format reads the file alone
    kText,       // text lines: every text format that recognizes the text reads it
  };
  std::string_view name;         // one of the constants above
  std::string_view description;  // one line: what produces it
  Kind kind;
  // How sure the format is that `data` (a file's bytes; for a text format,
  // its decoded text) is its own: 0 (not at all) to 100. Cheap: a look at
  // the head or a substring search, never a full parse.
  int (*sniff)(std::string_view data);
  // Reads `in` into `out`: records, and a diagnostic for every data problem
  // (never fatal). Returns false when nothing usable was found: for an
  // exclusive format the file counts as unreadable and its records are
  // dropped; for a text format, it recognized nothing after all (the
  // messages format: an anchor, but no known message), as if its sniff had
  // said 0.
  bool (*parse)(const Artifact& in, RecordSink* out);
};

// Every format, in the order they are sniffed and, for text, run.
std::span<const Format> Formats();

// The format named `name`, or nullptr.
const Format* FindFormat(std::string_view name);

// The names of all formats, comma-separated in table order ("fr-pickle,
// fr-json, ..."), for help texts and messages.
std::string FormatNames();

// What reading one file came to.
// True when `path`'s file name is a Flight Recorder dump's as torch writes
// it: "<prefix>trace_rank_" and a rank after it, maybe after a host name
// (the default TORCH_FR_DUMP_TEMP_FILE /tmp/nccl_trace_rank_<N>,
// fr_trace_rank_<N>[.json], nccl_trace_rank_node02_5).
bool IsFlightRecorderDumpName(std::string_view path);

struct ArtifactResult {
  enum class Outcome { kUsed, kSkipped, kUnreadable } outcome = Outcome::kUsed;
  // The exclusive format that read it; nullptr for text (any number of text
  // formats) and for a skipped file.
  const Format* format = nullptr;
  // Skipped because it holds nothing (0 bytes, or a byte order mark only).
  bool empty = false;
};

// Reads one file with the formats it is in: the most confident exclusive
// format, else (after logs::DecodeText: NUL padding dropped, UTF-16 read as
// its ASCII) every text format that recognizes it. An empty file, binary
// data and text no format recognizes are skipped with a diagnostic that
// names the formats and, for text that looks like a producer's, which one
// and what was not understood (NearMiss, also in FileRead::looks_like).
// The formats that read it are in out->Reading().format, comma-separated in
// table order ("torch-log, messages"). Records and diagnostics go to *out.
ArtifactResult ReadArtifact(const Artifact& in, RecordSink* out);

}  // namespace hangdx::ingest
