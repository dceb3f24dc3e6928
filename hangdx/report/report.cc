#include "hangdx/report/report.h"

#include <algorithm>
#include <set>

#include "hangdx/base/rank_set.h"
#include "hangdx/report/json_writer.h"
#include "hangdx/report/rank_classes.h"

namespace hangdx::report {

std::string Printable(std::string_view s) {
  std::string o(s);
  for (size_t i = 0; i < o.size();) {
    unsigned char c = static_cast<unsigned char>(o[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) o[i] = '?';
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlong 2-byte forms) is kept.
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= o.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(o[i + k]) & 0xc0) == 0x80;
    if (ok) {
      i += n;
    } else {
      o[i] = '?';
      ++i;
    }
  }
  return o;
}

namespace {

using analyze::Diagnosis;
using analyze::Finding;

const char* DiagSeverity(model::Diagnostic::Severity s) {
  switch (s) {
    case model::Diagnostic::Severity::kInfo:
      return "info";
    case model::Diagnostic::Severity::kWarning:
      return "warning";
    case model::Diagnostic::Severity::kError:
      return "error";
  }
  return "warning";
}

std::string C(std::string_view s) { return Printable(s); }

// "  warning: FILE @ byte N: message\n", control characters escaped.
std::string DiagLine(const model::Diagnostic& diag) {
  // A job-wide note has no file: no empty "warning: : ..." field.
  std::string where =
      diag.file.empty() ? "" : C(diag.file) + (diag.offset >= 0 ? " @ byte " + std::to_string(diag.offset) : "") + ": ";
  return "  " + std::string(DiagSeverity(diag.severity)) + ": " + where + C(diag.message) + "\n";
}

// One diagnostic in the JSON documents.
nlohmann::ordered_json DiagJson(const model::Diagnostic& g) {
  using J = nlohmann::ordered_json;
  return {{"severity", DiagSeverity(g.severity)},
          {"file", g.file},
          {"rank", g.rank >= 0 ? J(g.rank) : J(nullptr)},
          {"offset", g.offset >= 0 ? J(g.offset) : J(nullptr)},
          {"message", g.message}};
}

// Rank sets in the text report: ranges, cut at a range boundary past
// kTextRanks characters with the count, so that a line of a 100,000-rank
// report fits a screen (--format json lists every rank).
constexpr size_t kTextRanks = 160;
std::string TextRanks(const std::vector<int64_t>& ranks, size_t max_chars = kTextRanks) {
  std::string text = FormatRanks(ranks);
  if (text.size() <= max_chars) return text;
  size_t cut = text.rfind(',', max_chars - 20);
  std::vector<int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  int64_t n = std::unique(sorted.begin(), sorted.end()) - sorted.begin();
  return text.substr(0, cut == std::string::npos ? max_chars - 20 : cut) + ",... (" + Count(n, "rank", "ranks") +
         "; --format json lists them)";
}

// The rank classes (rank_classes.h), one line each, largest first: shown
// when a report has more than kClassesFrom ranks, at most kClassLines.
constexpr size_t kClassesFrom = 64, kClassLines = 16;
std::string ClassLines(const RankClasses& c) {
  std::vector<size_t> order(c.classes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return c.classes[a].count > c.classes[b].count; });
  std::string o = "\nRank classes (" + std::to_string(c.of.size()) + " ranks in " +
                  Count(static_cast<int64_t>(c.classes.size()), "class", "classes") +
                  ": the same state, waiting for ranks in the same states), largest first:\n";
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == kClassLines) {
      o += "  ... " + Count(static_cast<int64_t>(order.size() - k), "more class", "more classes") +
           " in --format json (rank_classes)\n";
      break;
    }
    const RankClass& r = c.classes[order[k]];
    o += "  #" + std::to_string(order[k]) + " [" + Count(r.count, "rank", "ranks") + "] " + C(r.state);
    if (!r.current.empty()) o += ", " + C(r.current);
    if (!r.waits_for.empty()) {
      o += ", waiting for ranks of class";
      o += r.waits_for.size() == 1 ? " " : "es ";
      for (size_t i = 0; i < r.waits_for.size(); ++i)
        o += (i ? "," : "") + std::string("#") + std::to_string(r.waits_for[i]);
    }
    o += ": " + TextRanks(r.ranks, 80) + "\n";
  }
  return o;
}

std::string PgText(const Finding& f) {
  if (f.pg_name.empty()) return "";
  std::string s = "pg " + C(f.pg_name);
  if (!f.pg_desc.empty() && f.pg_desc != "undefined" && f.pg_desc.size() <= 32) s += " (" + C(f.pg_desc) + ")";
  if (f.seq >= 0) s += " seq " + std::to_string(f.seq);
  return s;
}

}  // namespace

std::string RenderText(const Diagnosis& d, size_t max_findings) {
  std::string o = C(d.verdict) + "\n";
  const auto& in = d.inputs;
  if (in.files) {
    o += "Input: " + std::to_string(in.files) + (in.files == 1 ? " file" : " files") + ", " + std::to_string(in.used) +
         " used";
    // Counted in `used` (a second dump's stacks and live wait still count):
    // only its entries are dropped, for the other dump's.
    if (in.duplicates)
      o += " (" + std::to_string(in.duplicates) + " of them a rank's second Flight Recorder dump, " +
           (in.duplicates == 1 ? "its" : "their") + " entries ignored)";
    if (size_t other = in.skipped - std::min(in.empty, in.skipped); other)
      o += ", " + std::to_string(other) + " skipped (not a format hangdx reads)";
    if (in.empty) o += ", " + std::to_string(in.empty) + " empty";
    if (in.unreadable) o += ", " + std::to_string(in.unreadable) + " unreadable";
    if (in.unplaced) o += ", " + std::to_string(in.unplaced) + " with nothing usable";
    if (in.skipped || in.unreadable || in.unplaced || in.duplicates) o += " (see the end)";
    o += "\n";
  }
  size_t shown = 0;
  for (const auto& f : d.findings) {
    if (shown++ == max_findings) {
      o += "\n... " + std::to_string(d.findings.size() - max_findings) +
           " more findings (use --format json to see all)\n";
      break;
    }
    o += "\n[" + std::string(analyze::KindName(f.kind)) + ", " + analyze::SeverityName(f.severity) + "] " +
         C(f.summary) + "\n";
    std::string pg = PgText(f);
    if (!pg.empty()) o += "  where:    " + pg + (f.op.empty() ? "" : " " + C(f.op)) + "\n";
    o += "  culprits: " + (f.culprit_ranks.empty() ? std::string("none named") : TextRanks(f.culprit_ranks)) +
         (f.ranks_are_pg_local ? " (ranks inside pg " + C(f.pg_name) + ")" : "") + "\n";
    if (!f.cycle.empty()) {
      o += "  cycle:    ";
      for (auto r : f.cycle) o += std::to_string(r) + " -> ";
      o += std::to_string(f.cycle.front()) + "\n";
    }
    for (const auto& role : f.roles) o += "  " + C(role.role) + ": " + TextRanks(role.ranks) + "\n";
    if (!f.candidates.empty()) o += "  candidates: " + TextRanks(f.candidates) + "\n";
    if (!f.would_decide.empty()) o += "  to decide: " + C(f.would_decide) + "\n";
    if (!f.blocked_behind.empty()) o += "  blocked behind it: ranks " + TextRanks(f.blocked_behind) + "\n";
    size_t n = 0;
    for (const auto& line : f.details) {
      if (n++ == 6) {
        o += "  ... " + std::to_string(f.details.size() - 6) + " more\n";
        break;
      }
      o += "  - " + C(line) + "\n";
    }
    n = 0;
    for (const auto& e : f.evidence) {
      if (n++ == 6) {
        o += "  evidence: ... " + std::to_string(f.evidence.size() - 6) + " more\n";
        break;
      }
      if (e.file.empty() && e.rank < 0) {  // a count of records not listed
        o += "  evidence: " + C(e.note) + "\n";
        continue;
      }
      o += "  evidence: " + C(e.file) + " (rank " + std::to_string(e.rank) +
           (e.record_id >= 0 ? ", record " + std::to_string(e.record_id) : "") + "): " + C(e.note) + "\n";
    }
    if (!f.fix_hint.empty()) o += "  fix:      " + f.fix_hint + "\n";
  }
  if (!d.pgs.empty()) {
    // The pgs that are stuck or disagree, then a count of the others (a
    // 1,024-rank job has hundreds of pgs).
    o += "\nProcess groups:\n";
    size_t quiet = 0, shown = 0;
    for (const auto& p : d.pgs) {
      bool notable = p.stuck_seq >= 0 || p.mismatched_seqs > 0 || d.pgs.size() <= 8;
      if (!notable || shown == 16) {
        ++quiet;
        continue;
      }
      ++shown;
      o += "  pg " + (p.name.empty() ? "''" : C(p.name)) +
           (p.desc.empty() || p.desc.size() > 32 ? "" : " (" + C(p.desc) + ")") + ": ranks " + TextRanks(p.ranks) +
           (p.ranks_inferred ? " (inferred)" : "") + ", last seq " + std::to_string(p.max_seq);
      if (p.stuck_seq >= 0) o += ", first unfinished seq " + std::to_string(p.stuck_seq) + " " + p.stuck_op;
      if (p.mismatched_seqs > 0) o += ", " + Count(p.mismatched_seqs, "seq", "seqs") + " where ranks disagree";
      o += "\n";
    }
    if (quiet) o += "  ... and " + std::to_string(quiet) + " more pgs" + (shown ? "" : ", none stuck") + "\n";
  }
  std::vector<int64_t> seen;
  for (const auto& r : d.ranks)
    if (!r.file.empty()) seen.push_back(r.rank);
  o += "\nRanks with data: " + (seen.empty() ? std::string("none") : TextRanks(seen));
  if (!d.unreadable.empty()) {
    std::vector<int64_t> bad;
    for (const auto& [r, file] : d.unreadable) bad.push_back(r);
    o += "; unreadable: " + TextRanks(bad);
  }
  // A rank whose only file was unreadable is named once, as unreadable.
  std::vector<int64_t> without;
  for (int64_t r : d.ranks_without_dump)
    if (!d.unreadable.count(r)) without.push_back(r);
  if (!without.empty())
    o += "; without: " + TextRanks(without) +
         (d.world_size_inferred ? " (world size " + std::to_string(d.world_size) + " inferred; set --world-size)" : "");
  o += "\n";
  if (d.ranks.size() > kClassesFrom) o += ClassLines(ClassifyRanks(d));
  // Problems first, then notes (skipped files), at most 12 lines.
  if (!d.diagnostics.empty()) {
    o += "\nInput problems and notes (" + std::to_string(d.diagnostics.size()) + "):\n";
    size_t k = 0;
    for (int pass = 0; pass < 2 && k <= 12; ++pass) {
      for (const auto& diag : d.diagnostics) {
        bool info = diag.severity == model::Diagnostic::Severity::kInfo;
        if (info != (pass == 1)) continue;
        if (k++ == 12) {
          o += "  ... " + std::to_string(d.diagnostics.size() - 12) + " more in --format json\n";
          break;
        }
        o += DiagLine(diag);
      }
    }
  }
  return o;
}

namespace {

void StackLines(const analyze::StackNode& n, int depth, std::string* o) {
  // Fold a chain of single children with the same ranks into one line.
  std::string line = C(n.frame);
  const analyze::StackNode* cur = &n;
  while (cur->children.size() == 1 && cur->children[0].ranks == cur->ranks) {
    cur = &cur->children[0];
    line += " > " + C(cur->frame);
  }
  *o += std::string(2 * depth, ' ') + "[" + FormatRanks(cur->ranks) + "] " + line + "\n";
  for (const auto& k : cur->children) StackLines(k, depth + 1, o);
}

// The tree as a flat list of nodes in depth-first order, parents first; a
// chain of single children with the same ranks is one node with its list of
// frames (as RenderStacksText folds it into one line), so the document's
// nesting depth is fixed however deep the stacks are, and its size grows
// with the frames that differ, not with ranks x depth.
nlohmann::ordered_json StackNodesJson(const analyze::StackNode& root) {
  using J = nlohmann::ordered_json;
  struct Todo {
    const analyze::StackNode* node;
    int64_t parent;  // -1: the root
  };
  J nodes = J::array();
  std::vector<Todo> todo = {{&root, -1}};
  while (!todo.empty()) {
    const Todo t = todo.back();
    todo.pop_back();
    const analyze::StackNode* cur = t.node;
    J frames = J::array();
    if (t.parent >= 0) {
      frames.push_back(cur->frame);
      while (cur->children.size() == 1 && cur->children[0].ranks == cur->ranks) {
        cur = &cur->children[0];
        frames.push_back(cur->frame);
      }
    }
    const int64_t id = static_cast<int64_t>(nodes.size());
    nodes.push_back({{"id", id},
                     {"parent", t.parent >= 0 ? J(t.parent) : J(nullptr)},
                     {"frames", std::move(frames)},
                     {"ranks", cur->ranks},
                     {"children", J::array()}});
    if (t.parent >= 0) nodes[static_cast<size_t>(t.parent)]["children"].push_back(id);
    for (auto it = cur->children.rbegin(); it != cur->children.rend(); ++it) todo.push_back({&*it, id});
  }
  return nodes;
}

}  // namespace

std::string RenderStacksText(const analyze::StackTree& t) {
  std::string o;
  if (t.root.ranks.empty()) {
    o = "No stacks: no stack dump, traceback or Flight Recorder frames among the inputs.\n";
  } else {
    o = std::to_string(t.root.ranks.size()) + (t.root.ranks.size() == 1 ? " rank" : " ranks") + " with a stack (" +
        FormatRanks(t.root.ranks) + "), outermost frame first; [ranks] per branch:\n";
    for (const auto& k : t.root.children) StackLines(k, 1, &o);
  }
  if (!t.from_flight_recorder.empty())
    o += "From the frames of their last Flight Recorder entry (no stack dump): ranks " +
         FormatRanks(t.from_flight_recorder) + "\n";
  if (!t.without_stack.empty()) o += "No stack for ranks " + FormatRanks(t.without_stack) + "\n";
  if (!t.cut.empty())
    o += "Stacks cut at their innermost " + std::to_string(analyze::kMaxStackFrames) +
         " frames (outer frames not read; a cut stack merges only with stacks cut by as many frames): ranks " +
         FormatRanks(t.cut) + "\n";
  if (!t.unreadable.empty()) {
    std::vector<model::Rank> bad;
    for (const auto& [r, why] : t.unreadable) bad.push_back(r);
    o += std::string("Could not read the file of ") + (bad.size() == 1 ? "rank " : "ranks ") + FormatRanks(bad) +
         " (missing above)\n";
  }
  if (!t.problems.empty()) {
    o += "\nInput problems (" + std::to_string(t.problems.size()) + "):\n";
    for (size_t k = 0; k < t.problems.size(); ++k) {
      if (k == 12) {
        o += "  ... " + std::to_string(t.problems.size() - 12) + " more in --format json\n";
        break;
      }
      const auto& diag = t.problems[k];
      o += DiagLine(diag);
    }
  }
  return o;
}

nlohmann::ordered_json StacksToJson(const analyze::StackTree& t) {
  nlohmann::ordered_json j;
  j["schema_version"] = kStacksSchemaVersion;
  j["tool"] = "hangdx stacks";
  j["nodes"] = StackNodesJson(t.root);
  j["from_flight_recorder"] = t.from_flight_recorder;
  j["without_stack"] = t.without_stack;
  j["cut"] = t.cut;
  nlohmann::ordered_json unreadable = nlohmann::ordered_json::array();
  for (const auto& [r, file] : t.unreadable) unreadable.push_back({{"rank", r}, {"file", file}});
  j["unreadable_dumps"] = unreadable;
  nlohmann::ordered_json diags = nlohmann::ordered_json::array();
  for (const auto& g : t.problems) diags.push_back(DiagJson(g));
  j["diagnostics"] = diags;
  return j;
}

nlohmann::ordered_json FindingToJson(const Finding& f) {
  using J = nlohmann::ordered_json;
  J x;
  x["kind"] = analyze::KindName(f.kind);
  x["severity"] = analyze::SeverityName(f.severity);
  x["hang"] = f.hang;
  x["summary"] = f.summary;
  x["pg"] = f.pg_name.empty() ? J(nullptr) : J{{"name", f.pg_name}, {"desc", f.pg_desc}};
  x["seq"] = f.seq >= 0 ? J(f.seq) : J(nullptr);
  x["op"] = f.op;
  x["culprit_ranks"] = f.culprit_ranks;
  if (f.ranks_are_pg_local) x["culprit_ranks_are_pg_local"] = true;
  J roles = J::array();
  for (const auto& r : f.roles) roles.push_back({{"role", r.role}, {"ranks", r.ranks}});
  x["roles"] = roles;
  x["cycle"] = f.cycle;
  x["blocked_behind"] = f.blocked_behind;
  x["details"] = f.details;
  J ev = J::array();
  for (const auto& e : f.evidence)
    ev.push_back({{"file", e.file},
                  {"rank", e.rank},
                  {"record_id", e.record_id >= 0 ? J(e.record_id) : J(nullptr)},
                  {"note", e.note}});
  x["evidence"] = ev;
  x["fix_hint"] = f.fix_hint;
  if (!f.candidates.empty() || !f.would_decide.empty()) {
    x["candidates"] = f.candidates;
    x["would_decide"] = f.would_decide;
  }
  if (!f.known_bug.id.empty())
    x["known_bug"] = J{{"id", f.known_bug.id},
                       {"library", f.known_bug.library},
                       {"affected", f.known_bug.affected},
                       {"fixed", f.known_bug.fixed},
                       {"url", f.known_bug.url}};
  return x;
}

// Above these counts the JSON lists ranks by class and only the edges of
// cycles: a 100,000-rank snapshot's ranks and edges were 38 of its 50 MB.
constexpr size_t kListedRanks = 4096, kListedEdges = 4096;

nlohmann::ordered_json ToJson(const Diagnosis& d) {
  using J = nlohmann::ordered_json;
  J j;
  j["schema_version"] = kSchemaVersion;
  j["tool"] = "hangdx";
  j["hang"] = d.hang;
  j["verdict"] = d.verdict;
  j["world_size"] = d.world_size;
  j["world_size_inferred"] = d.world_size_inferred;
  j["ranks_without_dump"] = d.ranks_without_dump;
  J unreadable = J::array();
  for (const auto& [r, file] : d.unreadable) unreadable.push_back({{"rank", r}, {"file", file}});
  j["unreadable_dumps"] = unreadable;
  j["inputs"] = {{"files", d.inputs.files},           {"used", d.inputs.used},
                 {"skipped", d.inputs.skipped},       {"unreadable", d.inputs.unreadable},
                 {"duplicates", d.inputs.duplicates}, {"unplaced", d.inputs.unplaced}};
  J findings = J::array();
  for (const auto& f : d.findings) findings.push_back(FindingToJson(f));
  j["findings"] = findings;
  J pgs = J::array();
  for (const auto& p : d.pgs)
    pgs.push_back({{"name", p.name},
                   {"desc", p.desc},
                   {"ranks", p.ranks},
                   {"ranks_inferred", p.ranks_inferred},
                   {"max_seq", p.max_seq},
                   {"stuck_seq", p.stuck_seq >= 0 ? J(p.stuck_seq) : J(nullptr)},
                   {"stuck_op", p.stuck_op},
                   {"mismatched_seqs", p.mismatched_seqs}});
  j["process_groups"] = pgs;
  const RankClasses classes = ClassifyRanks(d);
  // Every rank up to kListedRanks; above, the lowest rank of each class
  // (rank_classes and rank_class say every rank's state).
  // rank_class is an array by rank: only when the ranks are dense enough
  // (a --rank 16777215 would make it 16 M long); otherwise every rank is listed.
  int64_t top = -1;
  for (const auto& r : d.ranks) top = std::max(top, r.rank);
  const bool dense = top < 2 * static_cast<int64_t>(d.ranks.size()) + 64;
  const bool all_ranks = d.ranks.size() <= kListedRanks || !dense;
  std::vector<bool> shown(classes.classes.size());
  J ranks = J::array();
  for (size_t i = 0; i < d.ranks.size(); ++i) {
    const auto& r = d.ranks[i];
    size_t c = static_cast<size_t>(classes.of[i]);
    if (!all_ranks && (shown[c] || classes.classes[c].ranks.front() != r.rank)) continue;
    shown[c] = true;
    ranks.push_back({{"rank", r.rank},
                     {"file", r.file.empty() ? J(nullptr) : J(r.file)},
                     {"state", r.state},
                     {"last_completed", r.last_completed},
                     {"current", r.current}});
  }
  j["ranks"] = ranks;
  j["ranks_listed"] = all_ranks ? "all" : "one per class";
  J class_list = J::array();
  for (size_t i = 0; i < classes.classes.size(); ++i) {
    const RankClass& c = classes.classes[i];
    class_list.push_back({{"id", i},
                          {"state", c.state},
                          {"current", c.current},
                          {"last_completed", c.last_completed},
                          {"file", c.file.empty() ? J(nullptr) : J(c.file)},
                          {"waits_for", c.waits_for},
                          {"count", c.count},
                          {"lowest_rank", c.ranks.front()}});
  }
  j["rank_classes"] = class_list;
  // rank_class[r]: the class of rank r (-1: r has no summary).
  std::vector<int> rank_class(dense ? static_cast<size_t>(top + 1) : 0, -1);
  for (size_t i = 0; i < d.ranks.size(); ++i)
    if (dense && d.ranks[i].rank >= 0 && rank_class[static_cast<size_t>(d.ranks[i].rank)] < 0)
      rank_class[static_cast<size_t>(d.ranks[i].rank)] = classes.of[i];
  j["rank_class"] = rank_class;
  // Every edge up to kListedEdges; above, those of cycles, at most that
  // many (rank_classes' waits_for say which states wait for which).
  const bool all_edges = d.edges.size() <= kListedEdges;
  J edges = J::array();
  for (const auto& e : d.edges) {
    if (!all_edges && (!e.in_cycle || edges.size() == kListedEdges)) continue;
    edges.push_back({{"from", e.from}, {"to", e.to}, {"label", e.label}, {"in_cycle", e.in_cycle}});
  }
  j["wait_for_graph"] = {
      {"edges", edges}, {"edge_count", d.edges.size()}, {"edges_listed", all_edges ? "all" : "cycles"}};
  J diags = J::array();
  for (const auto& g : d.diagnostics) diags.push_back(DiagJson(g));
  j["diagnostics"] = diags;
  j["files"] = d.files.size();
  return j;
}

std::string RenderJson(const Diagnosis& d) { return WriteJson(ToJson(d)); }

std::string RenderStacksJson(const analyze::StackTree& t) { return WriteJson(StacksToJson(t)); }

std::string RenderDot(const Diagnosis& d) {
  std::set<int64_t> culprits, nodes;
  for (const auto& f : d.findings)
    if (f.severity == analyze::Severity::kError) culprits.insert(f.culprit_ranks.begin(), f.culprit_ranks.end());
  for (const auto& e : d.edges) nodes.insert(e.from), nodes.insert(e.to);
  nodes.insert(culprits.begin(), culprits.end());
  auto esc = [](std::string s) {
    std::string o;
    for (char c : C(s)) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o;
  };
  std::string o = "digraph wait_for {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  o += "  label=\"" + esc(d.verdict) + "\";\n  labelloc=t;\n";
  std::set<int64_t> nodump(d.ranks_without_dump.begin(), d.ranks_without_dump.end());
  for (int64_t r : nodes) {
    o += "  r" + std::to_string(r) + " [label=\"rank " + std::to_string(r) + (nodump.count(r) ? "\\n(no dump)" : "") +
         "\"";
    if (culprits.count(r))
      o += std::string(", style=\"filled") + (nodump.count(r) ? ",dashed" : "") + "\", fillcolor=\"#f4b6b6\"";
    else if (nodump.count(r))
      o += ", style=dashed";
    o += "];\n";
  }
  for (const auto& e : d.edges) {
    o += "  r" + std::to_string(e.from) + " -> r" + std::to_string(e.to) + " [label=\"" + esc(e.label) + "\"";
    if (e.in_cycle) o += ", color=red, penwidth=2";
    o += "];\n";
  }
  return o + "}\n";
}

}  // namespace hangdx::report
