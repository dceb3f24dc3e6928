// hangdx/ingest/logs/line_util.h
// Shared pieces of the text-artifact parsers: a line reader that cleans each
// line (ANSI colours, tqdm-style `\r` overwrites, trailing spaces, over-long
// lines) and peels the prefixes launchers put in front of it (Ray, Open MPI
// --tag-output, kubectl --timestamps, torchrun `[default0]:`, c10's
// `[rank3]:`, slurm `srun -l` `3: `); number parsing that never throws;
// NCCL's dtype and op names.
//
//   LineReader r(data);
//   for (Line l; r.Next(&l);)
//     if (l.text.find(" NCCL INFO ") != std::string_view::npos) ...
//
// Rules from docs/log-formats.md section 0. Not thread-safe; cheap.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::ingest::logs {

// Longest line a parser looks at; the rest of a longer line is ignored (NCCL
// itself cuts at 1024 bytes; c10 mismatch messages run to a few KiB).
inline constexpr size_t kMaxLineBytes = 64 * 1024;

// One line of a text artifact, cleaned and with foreign prefixes peeled.
struct Line {
  std::string_view text;    // cleaned; valid until the next LineReader::Next()
  int64_t number = 0;       // 1-based line number in the file
  int64_t offset = 0;       // byte offset of the line's first byte
  int64_t rank = -1;        // global rank a peeled prefix names ([rank3]:, `3: `, mpirun [1,3]), else -1
  int64_t local_rank = -1;  // local rank a torchrun `[default0]:` prefix names, else -1
  bool truncated = false;   // longer than kMaxLineBytes
  // The text as it was before the first launcher tag that a message can
  // also start with was peeled (slurm `3: `, a bare `[3] `; the last such tag
  // when several stack), else empty:
  // Horovod's "Stalled ranks:" block lists "3: [tensor, ...]", PyTorch's
  // desync report "[1] finished collective #4", so their readers look here
  // when the peeled text fits nothing.
  std::string_view before_tag;
};

// Splits `data` into lines ('\n'; a '\r' before it is dropped) and cleans
// each: keeps the text after the last '\r' (progress bars overwrite), strips
// ANSI escape sequences and trailing whitespace, cuts at kMaxLineBytes, and
// peels prefixes with PeelPrefixes(). Never fails; binary bytes pass through.
class LineReader {
 public:
  explicit LineReader(std::string_view data) : data_(data) {}
  // Fills *line with the next line; false at the end of the data.
  bool Next(Line* line);
  int64_t truncated_lines() const { return truncated_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  int64_t number_ = 0;
  int64_t truncated_ = 0;
  std::string buf_;
};

// Removes ANSI escapes, keeps the text after the last '\r', trims trailing
// whitespace. Returns a view of `line` or of *buf (when bytes were removed).
std::string_view CleanLine(std::string_view line, std::string* buf);

// Peels the foreign prefixes of spec section 0 off the front of `text`,
// repeatedly (they stack): Ray `(RayTrainWorker pid=615, ip=10.72.7.6) `,
// Open MPI `Fri Aug 11 12:31:45 2023[1,0]<stdout>:` (rank = second number),
// kubectl `2025-11-24T03:20:21.001125857Z `, launcher `[1803] `, torchrun
// `[default0]:` (local rank), c10 `[rank3]:`, slurm `3: `. Sets *rank /
// *local_rank (left alone when no prefix names one). Returns the rest; when
// an ambiguous tag was peeled (slurm `3: `, bare `[3] `), *before_tag (if
// given) is the text before the last such tag.
std::string_view PeelPrefixes(std::string_view text, int64_t* rank, int64_t* local_rank,
                              std::string_view* before_tag = nullptr);

// Decimal / hexadecimal (no 0x; an optional 0x is skipped) integer of the
// whole view; false on junk, empty, or overflow.
bool ParseDec(std::string_view s, int64_t* v);
bool ParseHex(std::string_view s, int64_t* v);
// Leading decimal digits of `s` (after optional '-'); false when none.
bool ParseDecPrefix(std::string_view s, int64_t* v, size_t* used = nullptr);

std::string_view Trim(std::string_view s);
bool Contains(std::string_view s, std::string_view needle);

// The text between `open` (after its first occurrence at or after `from`)
// and the next `close`, e.g. Between("tag[X], a", "tag[", "]") == "X".
// Empty and *found=false when absent.
std::string_view Between(std::string_view s, std::string_view open, std::string_view close, bool* found = nullptr);

// True when `data` holds NUL bytes or mostly non-text bytes in its head: a
// binary file that no text format can be.
bool LooksBinary(std::string_view data);

// How a file's bytes hold text. Logs of crashed processes often end in (or
// hold runs of) NUL bytes the file system padded them with; Windows tools
// write UTF-16.
enum class TextEncoding {
  kText,       // plain bytes, no NUL: read as is
  kNulPadded,  // text with NUL runs: read with the NULs dropped
  kUtf16,      // UTF-16 (BOM FF FE / FE FF, or every other byte NUL): its ASCII subset is read
  kBinary,     // NULs or control bytes in the head that no text has
};

// Classifies `data` from its head (4 KiB; a binary file is not read
// further). For kNulPadded and kUtf16, *text receives the readable text:
// NUL bytes dropped (line numbers stay), UTF-16 code units below 0x80 as
// bytes and the others as '?', NUL units dropped, the BOM skipped.
TextEncoding DecodeText(std::string_view data, std::string* text);

// PyTorch dtype name ("Half", "Float", "Long", ...) for an ncclDataType_t
// value (NVIDIA/nccl src/nccl.h.in); "" for an unknown value.
std::string_view NcclDtypeName(int64_t v);

// PyTorch op name ("all_reduce", "all_gather", "send", ...) for an NCCL API
// name as NCCL's enqueue line (src/enqueue.cc) and the RAS report print it
// ("AllReduce", "Send"); "" if unknown.
std::string_view NcclOpToTorch(std::string_view nccl_name);

}  // namespace hangdx::ingest::logs
