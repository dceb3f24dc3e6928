#include "hangdx/ingest/explain.h"

#include <filesystem>
#include <map>

#include "hangdx/base/mapped_file.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/formats/messages/messages.h"
#include "hangdx/ingest/logs/line_util.h"
#include "hangdx/ingest/messages/fields.h"
#include "hangdx/ingest/walk.h"

namespace hangdx::ingest {
namespace {

constexpr size_t kMaxShownPerFile = 2000;  // a 1 GB log lists its first recognized lines, then counts

// "seq=5 op=all_reduce" from the captures.
std::string Captures(const messages::MessageFields& f) {
  std::string s;
  for (const auto& [k, v] : messages::FieldsToMap(f)) {
    std::string val = v.size() > 80 ? v.substr(0, 77) + "..." : v;
    if (val.find(' ') != std::string::npos) val = "\"" + val + "\"";
    s += (s.empty() ? "" : " ") + k + "=" + val;
  }
  return s;
}

std::string Who(const messages_format::Attribution& a) {
  std::string s = a.rank >= 0 ? "rank " + std::to_string(a.rank) + " (" + a.how + ")" : "rank unknown";
  if (!a.pg.empty()) s += ", pg " + a.pg + (a.pg_rank >= 0 ? " rank " + std::to_string(a.pg_rank) : "");
  if (!a.ranks.empty() || !a.ready_ranks.empty())
    s += a.ranks_pg_local ? ", names ranks inside the pg" : ", names global ranks";
  return s;
}

// The explanation of one file's text.
std::string ExplainText(const Artifact& in) {
  int64_t lines = 0;
  std::vector<Recognized> found = ScanMessages(in, &lines);
  std::string out;
  if (found.empty()) {
    std::string near = NearMiss(in.data);
    return "  " + std::to_string(lines) + " lines, no message hangdx knows" + (near.empty() ? "" : "; it " + near) +
           "\n";
  }
  std::map<std::string, int64_t> by_reader;
  for (const Recognized& r : found) ++by_reader[r.reader];
  out += "  " + std::to_string(lines) + " lines, " + std::to_string(found.size()) + " recognized messages (";
  bool first = true;
  for (const auto& [reader, n] : by_reader)
    out += (first ? "" : ", ") + std::to_string(n) + " read by " + reader, first = false;
  out += ")\n";
  size_t shown = 0;
  for (const Recognized& r : found) {
    if (shown++ == kMaxShownPerFile) {
      out += "  ... " + std::to_string(found.size() - kMaxShownPerFile) + " more\n";
      break;
    }
    const messages::Row& row = *r.match.row;
    out += "  line " + std::to_string(r.match.line) + ": " + row.id + " (" + messages::EventKindName(row.event) + "; " +
           row.producer + "; read by " + r.reader + "): " + Who(r.who) + "\n";
    std::string caps = Captures(r.match.fields);
    if (!caps.empty()) out += "      " + caps + "\n";
    for (const auto& p : r.match.problems) out += "      problem: " + p + "\n";
  }
  return out;
}

}  // namespace

StatusOr<std::string> ExplainMessages(const std::vector<std::string>& paths, const LoadOptions& options) {
  model::DiagnosticSink diags;
  std::vector<std::string> files, existing;
  size_t missing = 0;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      ++missing;
      diags.Add(model::Diagnostic::Severity::kError, p, "no such file or folder");
      continue;
    }
    existing.push_back(p);
  }
  for (const WalkEntry& e : WalkInputs(existing, &diags)) {
    if (e.kind == WalkEntry::Kind::kFile)
      files.push_back(e.path);
    else
      diags.Add(model::Diagnostic::Severity::kInfo, e.path, e.why);
  }
  if (paths.empty() || missing == paths.size())
    return NotFound((paths.empty() ? std::string("no path") : paths.front()) + ": no such file or folder");
  std::vector<int64_t> hints = InferRanks(files);
  std::string out;
  for (size_t i = 0; i < files.size(); ++i) {
    auto over = options.rank_of.find(files[i]);
    int64_t hint = over != options.rank_of.end() ? over->second : hints[i];
    out += files[i] + (hint >= 0 ? " (rank " + std::to_string(hint) + " by its name)" : "") + ":\n";
    StatusOr<MappedFile> file = MappedFile::Open(files[i], options.max_file_bytes);
    if (!file.ok()) {
      out += "  cannot read: " + file.status().message() + "\n";
      continue;
    }
    Artifact in{file->data(), files[i], hint};
    // A document an exclusive format reads holds no log lines.
    const Format* exclusive = nullptr;
    int best = 0;
    for (const Format& f : Formats())
      if (f.kind == Format::Kind::kExclusive && f.sniff(in.data) > best) best = f.sniff(in.data), exclusive = &f;
    if (exclusive) {
      out += "  a " + std::string(exclusive->name) + " document (" + std::string(exclusive->description) +
             "), no log lines\n";
      continue;
    }
    std::string decoded;
    logs::TextEncoding enc = logs::DecodeText(in.data, &decoded);
    if (enc == logs::TextEncoding::kBinary) {
      out += "  binary data, not a format hangdx reads\n";
      continue;
    }
    if (enc != logs::TextEncoding::kText) in.data = decoded;
    out += ExplainText(in);
  }
  for (const auto& d : diags.Take()) out += "note: " + d.file + ": " + d.message + "\n";
  return out;
}

}  // namespace hangdx::ingest
