#include "hangdx/ingest/messages/catalogue.h"

#include <re2/re2.h>

#include <map>
#include <optional>
#include <set>

#include "hangdx/base/key_value_rows.h"
#include "hangdx/ingest/logs/line_util.h"
#include "hangdx/ingest/messages/fields.h"

namespace hangdx::ingest::messages {
namespace {

// The built-in catalogue files, generated at build time from data/*.msgs
// (cmake/embed_messages.cmake): {name, text} pairs, then {nullptr, nullptr}.
#include "hangdx/ingest/messages/builtin_messages.inc"

constexpr std::pair<EventKind, const char*> kEventNames[] = {
    {EventKind::kOp, "op"},
    {EventKind::kTimeout, "timeout"},
    {EventKind::kStatus, "status"},
    {EventKind::kMismatch, "mismatch"},
    {EventKind::kCulprit, "culprit"},
    {EventKind::kStall, "stall"},
    {EventKind::kPeerLost, "peer_lost"},
    {EventKind::kCrash, "crash"},
    {EventKind::kExit, "exit"},
    {EventKind::kAbort, "abort"},
    {EventKind::kHeartbeat, "heartbeat"},
    {EventKind::kInit, "init"},
    {EventKind::kConfig, "config"},
    {EventKind::kProgress, "progress"},
    {EventKind::kInfo, "info"},
};

constexpr std::pair<RankScope, const char*> kScopeNames[] = {
    {RankScope::kGlobal, "global"},
    {RankScope::kPg, "pg"},
    {RankScope::kGroup, "group"},
    {RankScope::kNode, "node"},
};

// The captures whose numbers are ranks: a row that has one says what they count in.
constexpr const char* kRankCaptures[] = {"rank", "ranks", "ready_ranks", "peer", "reporter"};

// A row being read: its lines' keys, then checked and converted.
class RowReader {
 public:
  RowReader(std::string_view file, int64_t line) { row_.file = file, row_.line = line; }
  Status Add(std::string_view key, std::string_view value, int64_t line);
  StatusOr<Row> Finish();

 private:
  Status Error(int64_t line, const std::string& what) const {
    return InvalidArgument(row_.file + ":" + std::to_string(line) + ": " + what);
  }
  Status CheckPattern(const std::string& pattern, int64_t line);
  Row row_;
  bool captures_ranks_ = false;  // a pattern names a capture of kRankCaptures
  std::set<std::string> seen_;
  RowTest pending_;  // example / instance lines waiting for their expect
  std::string pending_url_;
  int64_t pending_line_ = 0;
};

Status RowReader::CheckPattern(const std::string& pattern, int64_t line) {
  RE2 re(pattern, RE2::Quiet);
  if (!re.ok()) return Error(line, "pattern does not compile: " + re.error());
  for (const auto& [name, index] : re.NamedCapturingGroups()) {
    if (!IsKnownField(name)) return Error(line, "capture '" + name + "' is not in the vocabulary (fields.h)");
    for (const char* r : kRankCaptures) captures_ranks_ = captures_ranks_ || name == r;
  }
  return Status::Ok();
}

Status RowReader::Add(std::string_view key, std::string_view value, int64_t line) {
  static const std::set<std::string_view> kRepeatable = {"continuation", "example", "instance",
                                                         "expect",       "real",    "note"};
  if (!kRepeatable.count(key) && !seen_.insert(std::string(key)).second)
    return Error(line, "key '" + std::string(key) + "' given twice");
  std::string v(value);
  if (key == "message")
    row_.id = v;
  else if (key == "producer")
    row_.producer = v;
  else if (key == "versions")
    row_.versions = v;
  else if (key == "source")
    row_.source = v;
  else if (key == "format")
    row_.format = v;
  else if (key == "anchor")
    row_.anchor = v;
  else if (key == "proves")
    row_.proves = v;
  else if (key == "note")
    row_.notes.push_back(v);
  else if (key == "real")
    pending_url_ = v;
  else if (key == "layout") {
    if (v != "line" && v != "block") return Error(line, "layout must be line or block, not '" + v + "'");
    row_.layout = v == "line" ? Row::Layout::kLine : Row::Layout::kBlock;
  } else if (key == "event") {
    if (!ParseEventKind(v, &row_.event)) return Error(line, "unknown event '" + v + "'");
  } else if (key == "subject") {
    if (v != "self" && v != "captured") return Error(line, "subject must be self or captured");
    row_.subject_captured = v == "captured";
  } else if (key == "exit_role") {
    if (v != "first_failure" && v != "stopped") return Error(line, "exit_role must be first_failure or stopped");
    row_.exit_role = v == "stopped" ? Row::ExitRole::kStopped : Row::ExitRole::kFirstFailure;
  } else if (key == "rank_scope") {
    if (!ParseRankScope(v, &row_.rank_scope)) return Error(line, "rank_scope must be global, pg, group or node");
  } else if (key == "pg_from") {
    if (v != "timeout") return Error(line, "pg_from must be timeout");
    row_.pg_from_timeout = true;
  } else if (key == "ends") {
    if (v != "op") return Error(line, "ends must be op");
    row_.ends_op = true;
  } else if (key == "reader") {
    if (v.empty() || v.find(' ') != std::string::npos) return Error(line, "reader names one input format");
    row_.reader = v;
  } else if (key == "printer") {
    int64_t r = -1;
    if (!logs::ParseDec(v, &r) || r < 0 || r > (1 << 24)) return Error(line, "printer is one global rank");
    row_.printer = r;
  } else if (key == "seq_base") {
    if (v != "0" && v != "1") return Error(line, "seq_base must be 0 or 1");
    row_.seq_base = v == "0" ? 0 : 1;
  } else if (key == "pattern" || key == "continuation" || key == "end" || key == "item") {
    HANGDX_RETURN_IF_ERROR(CheckPattern(v, line));
    if (key == "pattern")
      row_.pattern = v;
    else if (key == "item")
      row_.item = v;
    else if (key == "end")
      row_.end = v;
    else
      row_.continuation.push_back(v);
  } else if (key == "example" || key == "instance") {
    bool real = key == "instance";
    if (!pending_.lines.empty() && pending_.real != real)
      return Error(line, "an example and an instance in one test: close the first with expect");
    if (pending_.lines.empty()) pending_line_ = line;
    pending_.real = real;
    pending_.lines.push_back(v);
  } else if (key == "expect") {
    if (pending_.lines.empty()) return Error(line, "expect without example or instance lines before it");
    // name=value pairs separated by spaces; a value with spaces is quoted:
    // error="Connection reset by peer".
    for (size_t i = 0; i < value.size();) {
      if (value[i] == ' ') {
        ++i;
        continue;
      }
      size_t eq = value.find('=', i);
      if (eq == std::string_view::npos)
        return Error(line, "expect needs name=value, not '" + std::string(value.substr(i)) + "'");
      std::string_view name = value.substr(i, eq - i);
      if (!IsKnownField(name) || name.find(' ') != std::string_view::npos)
        return Error(line, "expect needs name=value with a vocabulary name, not '" + std::string(name) + "'");
      size_t b = eq + 1, e;
      std::string_view v;
      if (b < value.size() && value[b] == '"') {
        e = value.find('"', b + 1);
        if (e == std::string_view::npos)
          return Error(line, "expect: unterminated quoted value of " + std::string(name));
        v = value.substr(b + 1, e - b - 1);
        ++e;
      } else {
        e = value.find(' ', b);
        if (e == std::string_view::npos) e = value.size();
        v = value.substr(b, e - b);
      }
      pending_.expect.emplace_back(std::string(name), std::string(v));
      i = e;
    }
    if (pending_.real && pending_url_.empty()) return Error(line, "instance lines need a `real URL` before them");
    pending_.url = pending_.real ? pending_url_ : "";
    row_.tests.push_back(std::move(pending_));
    pending_ = RowTest{};
  } else {
    return Error(line, "unknown key '" + std::string(key) + "'");
  }
  return Status::Ok();
}

StatusOr<Row> RowReader::Finish() {
  if (!pending_.lines.empty()) return Error(pending_line_, "example/instance lines without an expect line");
  for (const char* key : {"producer", "versions", "source", "format", "layout", "anchor", "pattern", "event", "proves"})
    if (!seen_.count(key)) return Error(row_.line, "row " + row_.id + " has no '" + key + "'");
  if (row_.tests.empty()) return Error(row_.line, "row " + row_.id + " has no example");
  if (row_.exit_role != Row::ExitRole::kNone && row_.event != EventKind::kExit)
    return Error(row_.line, "row " + row_.id + ": exit_role is for event exit");
  if (captures_ranks_ && row_.rank_scope == RankScope::kNone)
    return Error(row_.line,
                 "row " + row_.id + " captures ranks: say what they count in (rank_scope global|pg|group|node)");
  if (!captures_ranks_ && row_.rank_scope != RankScope::kNone)
    return Error(row_.line, "row " + row_.id + " has a rank_scope but captures no rank");
  if (row_.layout == Row::Layout::kLine && (!row_.continuation.empty() || !row_.end.empty()))
    return Error(row_.line, "row " + row_.id + ": continuation and end are for layout block");
  if (row_.layout == Row::Layout::kBlock && !row_.item.empty())
    return Error(row_.line, "row " + row_.id + ": item is for layout line");
  if (row_.layout == Row::Layout::kBlock && row_.continuation.empty())
    return Error(row_.line, "row " + row_.id + ": a block needs at least one continuation");
  return std::move(row_);
}

Status ParseInto(std::string_view text, std::string_view name, std::vector<Row>* rows, std::set<std::string>* ids) {
  std::optional<RowReader> reader;
  auto close = [&]() -> Status {
    if (!reader) return Status::Ok();
    HANGDX_ASSIGN_OR_RETURN(Row row, reader->Finish());
    if (!ids->insert(row.id).second)
      return InvalidArgument(std::string(name) + ":" + std::to_string(row.line) + ": duplicate message id " + row.id);
    rows->push_back(std::move(row));
    reader.reset();
    return Status::Ok();
  };
  auto on_line = [&](const KeyValueLine& l) -> Status {
    if (!reader) {
      if (l.key != "message")
        return InvalidArgument(std::string(name) + ":" + std::to_string(l.line) + ": a row starts with 'message ID'");
      reader.emplace(name, l.line);
    }
    return reader->Add(l.key, l.value, l.line);
  };
  return ReadKeyValueRows(text, on_line, close);  // closes the last row too
}

}  // namespace

const char* EventKindName(EventKind kind) {
  for (const auto& [k, name] : kEventNames)
    if (k == kind) return name;
  return "info";
}

const char* RankScopeName(RankScope scope) {
  for (const auto& [k, name] : kScopeNames)
    if (k == scope) return name;
  return "none";
}

bool ParseRankScope(std::string_view name, RankScope* scope) {
  for (const auto& [k, n] : kScopeNames)
    if (name == n) {
      *scope = k;
      return true;
    }
  return false;
}

bool ParseEventKind(std::string_view name, EventKind* kind) {
  for (const auto& [k, n] : kEventNames)
    if (name == n) {
      *kind = k;
      return true;
    }
  return false;
}

StatusOr<Catalogue> Catalogue::Parse(std::string_view text, std::string_view name) {
  return ParseAll({{std::string(name), std::string(text)}});
}

StatusOr<Catalogue> Catalogue::ParseAll(const std::vector<std::pair<std::string, std::string>>& files) {
  Catalogue c;
  std::set<std::string> ids;
  for (const auto& [name, text] : files) HANGDX_RETURN_IF_ERROR(ParseInto(text, name, &c.rows_, &ids));
  return c;
}

namespace {
struct BuiltinState {
  Catalogue catalogue;
  std::vector<std::string> errors;
};
const BuiltinState& LoadBuiltin() {
  static const BuiltinState* state = [] {
    auto* s = new BuiltinState;
    std::vector<std::pair<std::string, std::string>> good;
    for (const auto* f = kBuiltinMessageFiles; f->first != nullptr; ++f) {
      // Each file alone first, so one broken file does not hide the others.
      StatusOr<Catalogue> one = Catalogue::Parse(f->second, f->first);
      if (one.ok())
        good.emplace_back(f->first, f->second);
      else
        s->errors.push_back(one.status().message());
    }
    StatusOr<Catalogue> all = Catalogue::ParseAll(good);
    if (all.ok())
      s->catalogue = std::move(all).value();
    else
      s->errors.push_back(all.status().message());
    return s;
  }();
  return *state;
}
}  // namespace

const Catalogue& Catalogue::Builtin() { return LoadBuiltin().catalogue; }
const std::vector<std::string>& Catalogue::BuiltinErrors() { return LoadBuiltin().errors; }

}  // namespace hangdx::ingest::messages
