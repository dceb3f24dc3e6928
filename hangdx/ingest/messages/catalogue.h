// hangdx/ingest/messages/catalogue.h
// The message catalogue: every hang-related message hangdx knows from the
// field's producers (PyTorch c10d, NCCL/RCCL, HCCL, Horovod, DeepSpeed,
// vLLM, ...), one row per wording, kept as data in data/*.msgs and compiled
// into the binary. A row says who prints the message, in which releases,
// the format string as the producer's source writes it, an RE2 pattern
// whose named groups use the capture vocabulary of fields.h, what the
// message proves (its event kind), and the lines it is tested on: one built
// from the format string and, where found, real lines from public reports.
// docs/field-messages.md is generated from it (`hangdx messages --markdown`).
//
// Row syntax (data/README.md lists every key): rows separated by
// blank lines, one `key value` per line, value verbatim (regexes raw):
//
//   message torch.nccl.watchdog_timeout
//   producer PyTorch c10d ProcessGroupNCCL
//   versions 1.13-2.13
//   source torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.1.0
//   format Watchdog caught collective operation timeout: {work} ran for {ms} milliseconds before timing out.
//   layout line
//   anchor Watchdog caught collective operation timeout
//   pattern Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)
//   event timeout
//   reader torch-log
//   proves this rank waited past its timeout in collective `seq`
//   example Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ...
//   expect seq=5 op=all_reduce
//
//   StatusOr<Catalogue> c = Catalogue::Parse(text, "torch.msgs");
//   const Catalogue& builtin = Catalogue::Builtin();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hangdx/base/status.h"

namespace hangdx::ingest::messages {

// What a message proves. Names are the `event` values of the rows.
enum class EventKind {
  kOp,         // one op called / launched / enqueued by a rank
  kTimeout,    // this rank's op did not finish within its timeout
  kStatus,     // a pg's progress: last enqueued / started / completed seq
  kMismatch,   // the producer compared ranks' ops and found them different
  kCulprit,    // the producer itself names the ranks to blame
  kStall,      // a rank has waited long, no timeout yet: maybe a hang
  kPeerLost,   // a connection to a peer closed / reset / timed out
  kCrash,      // this rank failed by itself (CUDA error, segfault, OOM)
  kExit,       // a process exited or was killed
  kAbort,      // the process was taken down because of a timeout
  kHeartbeat,  // the watchdog / heartbeat monitor itself is stuck
  kInit,       // a communicator / pg was created
  kConfig,     // a setting relevant to known bugs
  kProgress,   // normal progress: an earlier warning was not a hang
  kInfo,       // recognized and harmless
};
// The row spelling ("timeout"); ParseEventKind returns false for others.
const char* EventKindName(EventKind kind);
bool ParseEventKind(std::string_view name, EventKind* kind);

// One input a row is tested on: lines (one, or several for a block) and
// the captures they must give, "name=value" with normalized values.
struct RowTest {
  std::vector<std::string> lines;
  std::vector<std::pair<std::string, std::string>> expect;
  bool real = false;  // from a public report (`instance`), not built from `format`
  std::string url;    // the report, for real ones
};

// What the rank-like captures of a row (`rank`, `ranks`, `ready_ranks`,
// `peer`, `reporter`) count in: the `rank_scope` key, required on every row
// that captures one of them.
enum class RankScope {
  kNone,    // the row captures no rank
  kGlobal,  // `global`: global ranks of the job (Horovod, fr_trace, torchelastic's rank)
  kPg,      // `pg`: ranks inside the message's pg (c10d prefix or `pg` capture) or NCCL
            // communicator; global when that pg is the default pg
  kGroup,   // `group`: an index inside a serving framework's parallel group (vLLM's
            // VllmWorker-N, SGLang's scheduler i); global when the file shows TP only
  kNode,    // `node`: launcher agents' ranks (one per node), never a process's rank
};
// The row spelling ("pg"); ParseRankScope returns false for others.
const char* RankScopeName(RankScope scope);
bool ParseRankScope(std::string_view name, RankScope* scope);

// One message wording of one producer.
struct Row {
  std::string id;        // "torch.nccl.watchdog_timeout"
  std::string producer;  // "PyTorch c10d ProcessGroupNCCL"
  std::string versions;  // "1.13-2.13", "2.2-"
  std::string source;    // "path@tag" the format was read from
  std::string format;    // the format string as the source writes it
  enum class Layout { kLine, kBlock } layout = Layout::kLine;
  std::string anchor;                     // literal every matching line holds (prefilter)
  std::string pattern;                    // RE2, partial match on the cleaned line
  std::vector<std::string> continuation;  // block: patterns of the following lines
  // line: a pattern matched again and again along the line, one message per
  // match, each with the row's captures and this one's in their place (a
  // list the producer prints on one line: Horovod's early stall line, one
  // "{tensor} [ready ranks: ...]" per stalled tensor); "" none.
  std::string item;
  std::string end;  // block: pattern of the closing line ("" none)
  EventKind event = EventKind::kInfo;
  bool subject_captured = false;  // the `rank` capture is not the printing rank
  // `exit_role first_failure|stopped`: what the launcher printing this exit
  // says of it (model::LogEvent::ExitRole); none without the key.
  enum class ExitRole { kNone, kFirstFailure, kStopped } exit_role = ExitRole::kNone;
  int seq_base = 1;               // 0: the producer counts seq from 0 (PyTorch DETAIL)
  RankScope rank_scope = RankScope::kNone;
  // `pg_from timeout`: the message names no pg because it follows a timeout
  // and is about that timeout's pg (c10d's desync report, printed by the
  // watchdog of the pg whose work timed out): its pg is the pg of the last
  // timeout the same rank reported in the file.
  bool pg_from_timeout = false;
  // `ends op`: the message is the error that the op the rank is blocked in
  // raises (gloo's transport timeout and connection errors, thrown from that
  // op's wait): the op ended, failed, when it was printed. A Flight Recorder
  // dump of the rank taken a moment before shows that op still pending
  // (ingest::EndOpsEndedByLogs).
  bool ends_op = false;
  // The input format whose own parser turns this message into records when
  // it reads the file (`reader torch-log`: a name of `hangdx formats`); ""
  // (no key): the catalogue's format, `messages`, does. Either way one
  // reader owns each message, so nothing is counted twice; the messages
  // format still recognizes an owned message (it is evidence the file was
  // read, and `hangdx messages FILE` shows it) and handles it itself when
  // the owner does not read the file.
  std::string reader;
  // `printer N`: the producer prints this message on global rank N only
  // (Horovod's stall inspector runs on the coordinator, rank 0), so a line
  // with no prefix and no rank of its own is rank N's; -1: any rank.
  int64_t printer = -1;
  std::string proves;  // one sentence
  std::vector<RowTest> tests;
  std::vector<std::string> notes;
  std::string file;  // catalogue file the row came from
  int64_t line = 0;  // 1-based line of its `message` key there
};

// An ordered set of rows with unique ids. Copyable; immutable once built.
class Catalogue {
 public:
  // Parses catalogue text (`name` is used in error messages). Errors
  // (kInvalidArgument, naming file and line): an unknown key or event, a row
  // without a required key, a duplicate id, a pattern RE2 refuses, a named
  // group outside the capture vocabulary.
  static StatusOr<Catalogue> Parse(std::string_view text, std::string_view name);
  // Parses several files into one catalogue (ids unique across them).
  static StatusOr<Catalogue> ParseAll(const std::vector<std::pair<std::string, std::string>>& name_and_text);
  // The catalogue compiled into the binary from data/*.msgs. A broken
  // built-in file is a build defect: the tests parse it; here its rows are
  // left out and BuiltinErrors() says why.
  static const Catalogue& Builtin();
  static const std::vector<std::string>& BuiltinErrors();

  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

}  // namespace hangdx::ingest::messages
