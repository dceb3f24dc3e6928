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

// What a file's lines have in common, read from its head once (DetectLayout):
// facts no single line can tell, which decide how prefixes are read.
struct TextLayout {
  // Hard-wrapped at this many bytes (a report pasted from a terminal or cut
  // by a log runner): a line of exactly this length (or one or two more: a
  // pasted `> ` or backtick before it) continues on the next line; 0 when
  // the file is not wrapped.
  size_t wrap_width = 0;
  // How lines start when they are not a continuation (first bytes with
  // digits as '0', see StartShape): a line after a wrapped one that starts
  // like none of these continues it.
  std::vector<std::string> start_shapes;
  // A job runner or docker compose tags the lines it relays ("name
  // [stderr] ", "svc-1  | "), and most lines carry the tag: a line without it
  // after a long one is that line's rest (the runner broke it at a word).
  bool relay_tagged = false;
  // Lines start with a bare "[N] " that counts up line by line: a tee'd line
  // number (LlamaFactory pastes "[1743] "), never a rank.
  bool numbered = false;
  // Lines start with a bare "[N] " whose values repeat and do not count up:
  // MPICH / Intel MPI `-prepend-rank`, so N is the global rank.
  bool bracket_ranks = false;
  // pdsh prefixes ("node2: ", "10.10.23.10: "): host names that start many
  // lines. Peeled; they name a host, not a rank.
  std::vector<std::string> hosts;
};

// Reads the layout of `data` from its head (the first MiB, 20,000 lines at
// most; wrap detection only for files of 16 MiB or less: pasted reports are
// small, and a big log is never hard-wrapped). Never fails.
//   - wrap width: a length of at least 60 bytes that at least 3 lines have
//     (or one or two more), each followed by a line that starts like no
//     line after a shorter one does (60% of them at least);
//   - relay_tagged: 3 lines and 40% or more carry a runner's stream tag or
//     docker compose's service tag;
//   - numbered / bracket_ranks: half the lines or more start with "[N] ";
//   - hosts: "name: " tokens (not all digits, with a digit, '-' or '.')
//     that together start 40% of the lines or more.
TextLayout DetectLayout(std::string_view data);

// The first 6 bytes of `line` with digits as '0': lines of one producer
// start alike ("[rank0", "node00"), a wrapped line's continuation does not.
std::string StartShape(std::string_view line);

// One line of a text artifact, cleaned and with foreign prefixes peeled.
struct Line {
  std::string_view text;    // cleaned; valid until the next LineReader::Next()
  int64_t number = 0;       // 1-based line number in the file (of its first physical line when joined)
  int64_t offset = 0;       // byte offset of the line's first byte
  int64_t rank = -1;        // global rank a peeled prefix names ([rank3]:, `3: `, mpirun [1,3]), else -1
  int64_t local_rank = -1;  // local rank a torchrun `[default0]:` prefix names, else -1
  // Indices inside a serving framework's parallel groups that a prefix names
  // (vLLM `(Worker_PP1_TP0 pid=..)`, `(EngineCore_DP0 pid=..)`, SGLang
  // `[ts DP0 TP3]`): ranks inside those groups, not global ranks; -1 none.
  int32_t tp = -1, dp = -1, pp = -1;
  // The pid of a Ray / vLLM process tag `(Worker_TP0 pid=23802)` (of the
  // innermost when tags nest: the process that printed), else -1. vLLM
  // renames a worker's tag once its groups exist ("(Worker pid=9)" then
  // "(Worker_TP0 pid=9)"): the pid is what stays.
  int64_t pid = -1;
  // Ray's log deduplication: ` [repeated 12x across cluster]` (stripped) says
  // this line stands for 12 more such lines of other processes; 0 none.
  int64_t repeated = 0;
  int32_t joined = 1;      // physical lines a hard-wrapped line was joined from
  bool truncated = false;  // longer than kMaxLineBytes
  // The text as it was before the first launcher tag that a message can
  // also start with was peeled (slurm `3: `, a bare `[3] `; the last such tag
  // when several stack), else empty:
  // Horovod's "Stalled ranks:" block lists "3: [tensor, ...]", PyTorch's
  // desync report "[1] finished collective #4", so their readers look here
  // when the peeled text fits nothing.
  std::string_view before_tag;
};

// What PeelPrefixes found in front of a line (a subset of Line).
struct LinePrefix {
  int64_t rank = -1, local_rank = -1;
  int32_t tp = -1, dp = -1, pp = -1;
  int64_t pid = -1;  // a Ray / vLLM process tag's pid= (the innermost tag's), else -1
  int64_t repeated = 0;
  std::string_view before_tag;
};

// Splits `data` into lines ('\n'; a '\r' before it is dropped) and cleans
// each: keeps the text after the last '\r' (progress bars overwrite), strips
// ANSI escape sequences and trailing whitespace, cuts at kMaxLineBytes, and
// peels prefixes with PeelPrefixes(). A hard-wrapped file (TextLayout::
// wrap_width) gets its wrapped lines joined first. Never fails; binary
// bytes pass through.
class LineReader {
 public:
  // The layout is detected from `data` (DetectLayout; the last detection is
  // remembered per thread, so the text formats that read one file in turn
  // detect it once).
  explicit LineReader(std::string_view data);
  LineReader(std::string_view data, TextLayout layout) : data_(data), layout_(std::move(layout)) {}
  // Fills *line with the next line; false at the end of the data.
  bool Next(Line* line);
  int64_t truncated_lines() const { return truncated_; }
  const TextLayout& layout() const { return layout_; }

 private:
  // The next physical line (its '\r' dropped), or false at the end.
  bool Physical(std::string_view* raw, size_t* start);
  // True when `next` continues `prev` (a hard-wrapped line).
  bool Continues(std::string_view prev, std::string_view next) const;

  std::string_view data_;
  TextLayout layout_;
  // Read bytes are released from memory every this many (ReleaseReadPages).
  static constexpr size_t kReleaseEvery = size_t{32} << 20;

  size_t pos_ = 0;
  size_t released_ = 0;  // data_ before this offset was released
  int64_t number_ = 0;
  int64_t truncated_ = 0;
  std::string buf_, joined_;
};

// Removes ANSI escapes, keeps the text after the last '\r', trims trailing
// whitespace. Returns a view of `line` or of *buf (when bytes were removed).
std::string_view CleanLine(std::string_view line, std::string* buf);

// Peels the foreign prefixes of spec section 0 (and docs/field-survey/nccl.md
// section 7) off the front of `text`, repeatedly (they stack):
//   Ray `(RayTrainWorker pid=615, ip=10.72.7.6) `, `(raylet) `; vLLM
//   `(VllmWorker rank=1 pid=9) ` (rank), `(VllmWorker TP1 pid=9) `,
//   `(Worker_PP1_TP0 pid=9) `, `(EngineCore_DP0 pid=9) ` (tp/pp/dp);
//   Open MPI `Fri Aug 11 12:31:45 2023[1,0]<stdout>:` (rank = second number);
//   kubectl `2025-11-24T03:20:21.001125857Z `; bracketed timestamps
//   `[2025-01-01 12:00:00] ` (NCCL 2.26 WARN, DeepSpeed, SGLang), with
//   SGLang's `[2025-01-01 12:00:00 DP0 TP3] ` (dp/tp); web viewers'
//   `18:11:06.680 `; docker compose `svc-1  | `; a runner's `name [stderr] `;
//   markdown `> `; SimpleTuner `[RANK 1] ` (rank); torch_npu `[rank:2]:`
//   (rank); torchrun `[default0]:` (local rank); c10 `[rank3]:`; launcher
//   `[1803] ` and slurm `3: ` (ambiguous: see below); pdsh `host: ` for the
//   hosts of `layout`.
// The ambiguous tags: a bare `[N] ` is a rank when layout.bracket_ranks (and
// it is the outermost prefix), never when layout.numbered; slurm `N: ` is a
// rank. When one was peeled, *before_tag is the text before the last such
// tag. A trailing Ray ` [repeated 12x across cluster]` (and Ray's note after
// it) is stripped and counted. Fields not named by a prefix are left alone.
std::string_view PeelPrefixes(std::string_view text, const TextLayout& layout, LinePrefix* prefix);
// The same with no file layout (no pdsh hosts, bare `[N] ` not a rank);
// sets *rank / *local_rank only.
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

// The wall-clock time a log line carries, ns since the epoch (UTC unless the
// stamp gives its offset), or 0 when its head (first 96 bytes) holds none.
// Read: ISO-8601 date and time with a year, `YYYY-MM-DD[T ]HH:MM:SS` with an
// optional `.`/`,` fraction and `Z` or `+HH:MM` -- kubectl --timestamps, the
// bracketed stamps of NCCL 2.26 WARN, DeepSpeed, SGLang and Horovod
// (`[2019-04-13 13:53:31.851506: W ...`), Python logging's asctime. Stamps
// without a year (glog `I1114 16:43:23`, vLLM `07-26 10:12:01`) give 0: their
// time since the epoch is unknown. `raw` is the line as written, before
// its prefixes were peeled.
int64_t LineTimeNs(std::string_view raw);

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

// How many members a collective's element counts imply, for c10d's WorkNCCL
// NumelIn / NumelOut (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, the
// watchdog's timeout line): an all_gather's output (and a gather root's) is
// every member's input, a reduce_scatter's input every member's output.
// `op` is a PyTorch op name ("all_gather", "_reduce_scatter_base"). 0 when
// the counts do not say: another op, counts that do not divide or are
// unknown (-1), a gather's non-root side (no output), a quotient past
// model::kMaxRank.
int64_t MembersBySizes(std::string_view op, int64_t numel_in, int64_t numel_out);

}  // namespace hangdx::ingest::logs
