#include "hangdx/ingest/messages/matcher.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>

#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest::messages {

// One row, compiled: its pattern, its block patterns, and for each named
// group the field it sets.
struct CompiledRow {
  const Row* row = nullptr;
  std::unique_ptr<RE2> pattern, end, item;
  std::vector<std::unique_ptr<RE2>> continuation;
};

struct CompiledCatalogue::Impl {
  std::vector<CompiledRow> rows;
  // Every row's anchor as a literal, one set: one scan of a line finds the
  // rows worth running (hundreds of patterns per line would not be).
  std::unique_ptr<RE2::Set> anchors;
  std::vector<int> set_to_row;
};

namespace {

constexpr int kMaxBlockLines = 4096;  // a block past this is closed (a hostile or endless report)
constexpr size_t kMaxEvidenceBytes = 2048;

RE2::Options Opts() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(8 << 20);
  return o;
}

// Sets every named group of `re` that matched in `text`; with `f` null,
// only says whether `re` matches (no submatches: RE2's fast path).
bool Capture(const RE2& re, std::string_view text, MessageFields* f, std::vector<std::string>* problems) {
  re2::StringPiece sp(text.data(), text.size());
  if (f == nullptr) return re.Match(sp, 0, text.size(), RE2::UNANCHORED, nullptr, 0);
  int n = re.NumberOfCapturingGroups();
  // One buffer per thread for the groups: no allocation per line.
  thread_local std::vector<re2::StringPiece> groups;
  if (groups.size() < static_cast<size_t>(n) + 1) groups.resize(n + 1);
  if (!re.Match(sp, 0, text.size(), RE2::UNANCHORED, groups.data(), n + 1)) return false;
  for (const auto& [name, index] : re.NamedCapturingGroups()) {
    const re2::StringPiece& g = groups[index];
    if (g.data() == nullptr) continue;  // an optional group that did not take part
    std::string err;
    if (!SetField(name, std::string_view(g.data(), g.size()), f, &err)) problems->push_back(err);
  }
  return true;
}

void FinishFields(const Row& row, MessageFields* f) {
  // DETAIL's SequenceNumber counts the collectives before this one.
  if (row.seq_base == 0 && f->seq >= 0 && f->seq < INT64_MAX) ++f->seq;
}

constexpr int64_t kMaxItems = int64_t{1} << 16;  // items of one line past this are not read (a hostile line)

// The messages of a line row with an `item` pattern: `m` (the row's match)
// once per item match along `text`, the item's captures replacing the
// row's, at most *left in all (decremented); `m` alone when no item
// matches.
void EmitItems(const CompiledRow& c, std::string_view text, MessageMatch m, std::vector<MessageMatch>* out,
               int64_t* left) {
  re2::StringPiece sp(text.data(), text.size()), whole;
  size_t pos = 0;
  int64_t n = 0, most = std::min(kMaxItems, *left);
  while (n < most && pos <= text.size() && c.item->Match(sp, pos, text.size(), RE2::UNANCHORED, &whole, 1)) {
    MessageMatch each = m;
    for (const auto& [name, index] : c.item->NamedCapturingGroups()) ClearField(name, &each.fields);
    Capture(*c.item, std::string_view(whole.data(), whole.size()), &each.fields, &each.problems);
    FinishFields(*c.row, &each.fields);
    out->push_back(std::move(each));
    ++n;
    size_t end = static_cast<size_t>(whole.data() - text.data()) + whole.size();
    pos = whole.empty() ? end + 1 : end;
  }
  *left -= n;
  if (n == most && n > 0 && c.item->Match(sp, pos, text.size(), RE2::UNANCHORED, nullptr, 0))
    out->back().problems.push_back("only the first " + std::to_string(n) +
                                   " items of this line were read (the item budget of a line and a file): the "
                                   "verdict may miss what the others say");
  if (n == 0) {
    FinishFields(*c.row, &m.fields);
    out->push_back(std::move(m));
  }
}

}  // namespace

C10dPrefix FindC10dPrefix(std::string_view t) {
  static const RE2 kPg(R"re(\[(?:PG (?:ID )?(\d+) (?:PG GUID ([^\s(\]]+))?\s?(?:\(([^)]*)\) ?)?)?Rank (\d+)\])re");
  C10dPrefix p;
  std::string rank;
  if (t.find("Rank ") == std::string_view::npos) return p;
  if (RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), kPg, &p.pg_id, &p.pg_guid, &p.pg_desc, &rank)) {
    p.found = true;
    p.pg_rank = rank.size() <= 9 ? std::stoll(rank) : -1;
  }
  return p;
}

CompiledCatalogue::CompiledCatalogue(const Catalogue& catalogue) : impl_(std::make_unique<Impl>()) {
  impl_->anchors = std::make_unique<RE2::Set>(Opts(), RE2::UNANCHORED);
  for (const Row& row : catalogue.rows()) {
    CompiledRow c;
    c.row = &row;
    c.pattern = std::make_unique<RE2>(row.pattern, Opts());
    bool ok = c.pattern->ok();
    if (!row.end.empty()) {
      c.end = std::make_unique<RE2>(row.end, Opts());
      ok = ok && c.end->ok();
    }
    if (!row.item.empty()) {
      c.item = std::make_unique<RE2>(row.item, Opts());
      ok = ok && c.item->ok();
    }
    for (const auto& p : row.continuation) {
      c.continuation.push_back(std::make_unique<RE2>(p, Opts()));
      ok = ok && c.continuation.back()->ok();
    }
    std::string err;
    if (!ok || impl_->anchors->Add(RE2::QuoteMeta(row.anchor), &err) < 0) {
      errors_.push_back(row.id + ": does not compile" + (err.empty() ? "" : ": " + err));
      continue;
    }
    impl_->set_to_row.push_back(static_cast<int>(impl_->rows.size()));
    impl_->rows.push_back(std::move(c));
  }
  if (!impl_->anchors->Compile()) errors_.push_back("the anchor set does not compile (too many rows?)");
}

CompiledCatalogue::~CompiledCatalogue() = default;

bool CompiledCatalogue::AnyAnchor(std::string_view text) const {
  RE2::Set::ErrorInfo info{};
  if (impl_->anchors->Match(re2::StringPiece(text.data(), text.size()), nullptr, &info)) return true;
  // RE2 gives up on a DFA out of memory (a huge input): say "maybe" then,
  // the line scan decides.
  return info.kind == RE2::Set::kOutOfMemory;
}

void CompiledCatalogue::RowsWithAnchor(std::string_view text, std::vector<const Row*>* rows) const {
  std::vector<int> hits;
  if (!impl_->anchors->Match(re2::StringPiece(text.data(), text.size()), &hits)) return;
  std::sort(hits.begin(), hits.end());
  for (int h : hits) rows->push_back(impl_->rows[impl_->set_to_row[h]].row);
}

const CompiledCatalogue& CompiledCatalogue::Builtin() {
  static const CompiledCatalogue* c = new CompiledCatalogue(Catalogue::Builtin());
  return *c;
}

MessageMatcher::MessageMatcher(const CompiledCatalogue& compiled) : compiled_(compiled) {}

bool MessageMatcher::Continue(std::string_view text, std::string_view before_tag, std::vector<MessageMatch>* out) {
  const CompiledRow& c = compiled_.impl().rows[block_row_];
  MessageFields* fields = block_.captured ? &block_.fields : nullptr;
  for (std::string_view t : {text, before_tag}) {
    if (t.data() == nullptr) continue;
    if (c.end && Capture(*c.end, t, fields, &block_.problems)) {
      FinishFields(*c.row, &block_.fields);
      out->push_back(std::move(block_));
      block_open_ = false;
      return true;
    }
    for (const auto& re : c.continuation)
      if (Capture(*re, t, fields, &block_.problems)) {
        if (++block_lines_ >= kMaxBlockLines) Finish(out);
        return true;
      }
  }
  Finish(out);  // the first line that fits none closes the block, and is read anew
  return false;
}

bool MessageMatcher::Feed(std::string_view text, int64_t line, int64_t offset, std::vector<MessageMatch>* out,
                          std::string_view before_tag) {
  if (block_open_ && Continue(text, before_tag, out)) return true;
  if (Start(text, line, offset, out)) return true;
  return before_tag.data() != nullptr && Start(before_tag, line, offset, out);
}

void MessageMatcher::SetWanted(const std::function<bool(const Row&)>& wanted) {
  wanted_fn_ = wanted;
  wanted_.assign(compiled_.impl().rows.size(), -1);
}

bool MessageMatcher::Wanted(size_t row) {
  if (!wanted_fn_ || row >= wanted_.size()) return true;
  if (wanted_[row] < 0) wanted_[row] = wanted_fn_(*compiled_.impl().rows[row].row) ? 1 : 0;
  return wanted_[row] == 1;
}

bool MessageMatcher::Feed(const logs::Line& l, std::vector<MessageMatch>* out, const logs::LinePrefix* tags) {
  if (tags != nullptr) {
    tags_ = *tags;
  } else {
    tags_.rank = l.rank, tags_.local_rank = l.local_rank;
    tags_.tp = l.tp, tags_.dp = l.dp, tags_.pp = l.pp;
    tags_.repeated = l.repeated;
  }
  tags_.before_tag = {};
  bool got = Feed(l.text, l.number, l.offset, out, l.before_tag);
  tags_ = logs::LinePrefix{};
  return got;
}

bool MessageMatcher::Start(std::string_view text, int64_t line, int64_t offset, std::vector<MessageMatch>* out) {
  const CompiledCatalogue::Impl& impl = compiled_.impl();
  re2::StringPiece sp(text.data(), text.size());
  // Most lines hold no anchor: the earliest-match scan says so without the
  // match set RE2 allocates when asked which anchors hit.
  hits_.clear();
  if (!impl.anchors->Match(sp, &hits_)) return false;
  std::sort(hits_.begin(), hits_.end());  // catalogue order: the first row that matches wins
  for (int h : hits_) {
    size_t index = static_cast<size_t>(impl.set_to_row[h]);
    const CompiledRow& c = impl.rows[index];
    MessageMatch m;
    m.captured = Wanted(index);
    if (!Capture(*c.pattern, text, m.captured ? &m.fields : nullptr, &m.problems)) continue;
    m.row = c.row;
    m.line = line;
    m.offset = offset;
    m.tags = tags_;
    if (m.captured) {
      m.c10d_prefix = FindC10dPrefix(text);
      m.text = std::string(text.substr(0, kMaxEvidenceBytes));
    }
    if (c.row->layout == Row::Layout::kBlock) {
      block_ = std::move(m);
      block_open_ = true;
      block_row_ = static_cast<size_t>(impl.set_to_row[h]);
      block_lines_ = 1;
    } else if (c.item && m.captured) {
      EmitItems(c, text, std::move(m), out, &items_left_);
    } else {
      FinishFields(*c.row, &m.fields);
      out->push_back(std::move(m));
    }
    return true;
  }
  return false;
}

void MessageMatcher::Finish(std::vector<MessageMatch>* out) {
  if (!block_open_) return;
  FinishFields(*block_.row, &block_.fields);
  out->push_back(std::move(block_));
  block_open_ = false;
}

std::vector<std::string> CheckRow(const CompiledCatalogue& compiled, const Row& row) {
  std::vector<std::string> failures;
  int n = 0;
  for (const RowTest& t : row.tests) {
    std::string what = row.id + ": " + (t.real ? "instance " : "example ") + std::to_string(++n);
    MessageMatcher m(compiled);
    std::vector<MessageMatch> got;
    int64_t line = 0;
    std::string buf;
    for (const auto& l : t.lines) {
      // As logs::LineReader hands lines to the matcher: cleaned, launcher
      // prefixes ([1,0]<stderr>:, [rank3]:, timestamps) peeled.
      int64_t rank = -1, local_rank = -1;
      std::string_view before_tag;
      std::string_view text = logs::PeelPrefixes(logs::CleanLine(l, &buf), &rank, &local_rank, &before_tag);
      m.Feed(text, ++line, 0, &got, before_tag);
    }
    m.Finish(&got);
    const MessageMatch* mine = nullptr;
    for (const auto& g : got)  // the first: a row with `item` gives one per item, tested on the first
      if (g.row == &row && mine == nullptr) mine = &g;
    if (mine == nullptr) {
      std::string other = got.empty() ? "nothing" : "row " + got.front().row->id;
      failures.push_back(what + ": does not match this row (matched " + other + ")");
      continue;
    }
    for (const auto& p : mine->problems) failures.push_back(what + ": " + p);
    // Both sides normalized the same way: `expect elapsed_s=60` is
    // elapsed_ms=60000, `signal=SIGKILL` is 9, `op=ALLREDUCE` is all_reduce.
    MessageFields expected;
    for (const auto& [k, v] : t.expect) {
      std::string err;
      if (!SetField(k, v, &expected, &err)) failures.push_back(what + ": expect " + err);
    }
    std::map<std::string, std::string> have = FieldsToMap(mine->fields);
    std::map<std::string, std::string> want = FieldsToMap(expected);
    for (const auto& [k, v] : want) {
      auto it = have.find(k);
      if (it == have.end())
        failures.push_back(what + ": expected " + k + "=" + v + ", got no " + k);
      else if (it->second != v)
        failures.push_back(what + ": expected " + k + "=" + v + ", got " + k + "=" + it->second);
    }
    for (const auto& [k, v] : have)
      if (!want.count(k)) failures.push_back(what + ": captured " + k + "=" + v + " that expect does not list");
  }
  return failures;
}

}  // namespace hangdx::ingest::messages
