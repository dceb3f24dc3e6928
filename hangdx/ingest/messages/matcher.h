// hangdx/ingest/messages/matcher.h
// MessageMatcher: the interpreter of the catalogue for text logs. Fed one
// cleaned line at a time (launcher prefixes already peeled by
// logs::LineReader), it finds the rows whose anchor the line holds (one
// RE2::Set scan over every anchor), runs their patterns, and turns the named
// groups into MessageFields. Line rows match one line; block rows (Horovod's
// stall report, torchelastic's ChildFailedError box) open on their
// `pattern` line and take the following lines that match a `continuation`
// until the `end` line or the first line that fits none.
//
// PyTorch c10d puts its own pg prefix inside the message text
// (`[PG ID 0 PG GUID 0(default_pg) Rank 1]`, `[PG 2 Rank 3]`, `[Rank 0]`):
// the matcher reads it into MessageMatch::c10d_prefix, so no row needs to.
//
//   MessageMatcher m(Catalogue::Builtin());
//   std::vector<MessageMatch> out;
//   for (logs::Line l; reader.Next(&l);) m.Feed(l.text, l.number, l.offset, &out);
//   m.Finish(&out);
//
// Thread-compatible: one matcher per thread (the compiled rows are shared
// and immutable).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hangdx/ingest/logs/line_util.h"
#include "hangdx/ingest/messages/catalogue.h"
#include "hangdx/ingest/messages/fields.h"

namespace hangdx::ingest::messages {

// c10d's pg prefix inside a message: `[PG ID 0 PG GUID 0(default_pg) Rank 1]`.
struct C10dPrefix {
  bool found = false;
  std::string pg_id, pg_guid, pg_desc;
  int64_t pg_rank = -1;  // the rank inside that pg
};

// Finds c10d's pg prefix anywhere in `text`.
C10dPrefix FindC10dPrefix(std::string_view text);

// One recognized message.
struct MessageMatch {
  const Row* row = nullptr;  // owned by the catalogue
  MessageFields fields;
  C10dPrefix c10d_prefix;             // of the first line
  int64_t line = 0;                   // 1-based line of the first line
  int64_t offset = 0;                 // byte offset of the first line
  std::string text;                   // the first line (cut at 2 KiB), for evidence
  std::vector<std::string> problems;  // captures that did not parse
  // What the launcher prefixes of the first line named (Feed(const
  // logs::Line&) fills it; before_tag is not kept).
  logs::LinePrefix tags;
  // False when the row's captures were not wanted (SetWanted): only row,
  // line, offset and tags are set.
  bool captured = true;
};

// The catalogue's patterns, compiled once. Immutable, shared by matchers.
class CompiledCatalogue {
 public:
  // Compiles every row of `catalogue` (which must outlive this). Rows whose
  // pattern RE2 refuses are left out and named in errors().
  explicit CompiledCatalogue(const Catalogue& catalogue);
  ~CompiledCatalogue();
  static const CompiledCatalogue& Builtin();
  const std::vector<std::string>& errors() const { return errors_; }
  // True when `text` holds some row's anchor: one scan that stops at the
  // first (a file's sniff). `text` may be a whole file.
  bool AnyAnchor(std::string_view text) const;
  // Appends the rows whose anchor `text` holds, in catalogue order.
  void RowsWithAnchor(std::string_view text, std::vector<const Row*>* rows) const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> errors_;
};

class MessageMatcher {
 public:
  explicit MessageMatcher(const CompiledCatalogue& compiled = CompiledCatalogue::Builtin());
  // Matches one cleaned line (no newline). Appends what it recognized to
  // *out (a block is appended when it closes). Returns true when the line
  // was part of a recognized message. `before_tag` (logs::Line) is tried
  // when `text` fits no row: "3: [a, b]" in a Horovod block is not a slurm
  // prefix, "[1] finished collective" in a desync report no launcher tag.
  bool Feed(std::string_view text, int64_t line, int64_t offset, std::vector<MessageMatch>* out,
            std::string_view before_tag = {});
  // The same for a line of logs::LineReader: its text, number, offset and
  // before_tag, and its prefixes' ranks (or `tags`, when given: what the
  // caller counts the line as having) into MessageMatch::tags.
  bool Feed(const logs::Line& line, std::vector<MessageMatch>* out, const logs::LinePrefix* tags = nullptr);
  // Says which rows' captures the caller needs (the default: every row's).
  // The others are still recognized, but matched without extracting groups
  // or copying the line, several times cheaper on a log where most lines
  // are such a row (an NCCL INFO log that nccl-log reads).
  void SetWanted(const std::function<bool(const Row&)>& wanted);
  // Closes an open block at the end of the input.
  void Finish(std::vector<MessageMatch>* out);

 private:
  bool Continue(std::string_view text, std::string_view before_tag, std::vector<MessageMatch>* out);
  bool Start(std::string_view text, int64_t line, int64_t offset, std::vector<MessageMatch>* out);
  bool Wanted(size_t row);
  const CompiledCatalogue& compiled_;
  // Per compiled row: -1 not asked yet, else whether its captures are wanted
  // (asked when the row first matches: the caller's test may be costly).
  std::function<bool(const Row&)> wanted_fn_;
  std::vector<int8_t> wanted_;
  logs::LinePrefix tags_;  // of the line being fed
  bool block_open_ = false;
  size_t block_row_ = 0;
  MessageMatch block_;
  int block_lines_ = 0;
  // Items (a row's `item` matches) this matcher may still give, per line
  // and in all: past it a line gives one message (with a problem saying
  // so), so a file of long item lists costs no more than its lines.
  int64_t items_left_ = int64_t{1} << 16;
  std::vector<int> hits_;
};

// Runs each test of `row` through a matcher over `compiled` and returns one
// line per failure ("torch.x: example 1: expected seq=5, got seq=4"):
// every test must match this row with exactly the `expect` captures. Test
// lines are cleaned and their launcher prefixes peeled first, as
// logs::LineReader does for a real log.
std::vector<std::string> CheckRow(const CompiledCatalogue& compiled, const Row& row);

}  // namespace hangdx::ingest::messages
