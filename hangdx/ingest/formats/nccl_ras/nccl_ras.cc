#include "hangdx/ingest/formats/nccl_ras/nccl_ras.h"

#include <re2/re2.h>

#include <map>
#include <set>

#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using logs::Contains;
using logs::Line;
using logs::LineReader;
using logs::NcclOpToTorch;
using logs::ParseDec;
using logs::Trim;

using Sev = model::Diagnostic::Severity;

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) f.push_back(s.substr(i, j - i));
    i = j;
  }
  return f;
}

struct CountGroup {
  int64_t n = -1;              // how many ranks (-1: one named rank)
  int64_t op = -1;             // launched up to this operation (0: none)
  std::vector<int64_t> ranks;  // listed individually
};

struct CommBlock {
  int64_t group = -1;
  std::string hash;
  std::string func;
  std::vector<CountGroup> counts;
  std::set<int64_t> missing, error_ranks;
  int64_t line = 0;
};

// Which list the "Rank R -- ..." lines under a heading belong to.
enum class List { kNone, kCount, kMissing, kError };

// A line inside communicator block *b: the function whose counts differ,
// a count group ("N ranks have launched up to operation X", "Rank R has
// ..."), a list heading (missing data, errors) or a rank of the current
// list (*list).
void OnBlockLine(std::string_view t, CommBlock* b, List* list) {
  static const RE2 kDiffer(R"re(Communicator ranks have different (\w+) operation counts)re");
  static const RE2 kNRanks(R"re(^(\d+) ranks? ha(?:ve|s) launched up to operation (\d+))re");
  static const RE2 kOneRank(R"re(^Rank (\d+) has launched up to operation (\d+))re");
  static const RE2 kNone(R"re(^Rank (\d+) has not launched any operations)re");
  static const RE2 kRankLine(R"re(^Rank (\d+) -- )re");
  re2::StringPiece sp(t.data(), t.size());
  std::string func;
  int64_t n = -1, op = -1, r = -1;
  if (RE2::PartialMatch(sp, kDiffer, &func)) {
    b->func = func;
  } else if (RE2::PartialMatch(sp, kNRanks, &n, &op)) {
    b->counts.push_back({n, op, {}});
    *list = List::kCount;
  } else if (RE2::PartialMatch(sp, kOneRank, &r, &op)) {
    b->counts.push_back({1, op, {r}});
    *list = List::kNone;
  } else if (RE2::PartialMatch(sp, kNone, &r)) {
    b->counts.push_back({1, 0, {r}});
    *list = List::kNone;
  } else if (Contains(t, "Missing communicator data")) {
    *list = List::kMissing;
  } else if (Contains(t, "error(s) on") || Contains(t, "ranks reported")) {
    *list = List::kError;
  } else if (RE2::PartialMatch(sp, kRankLine, &r)) {
    if (*list == List::kCount && !b->counts.empty())
      b->counts.back().ranks.push_back(r);
    else if (*list == List::kMissing)
      b->missing.insert(r);
    else if (*list == List::kError)
      b->error_ranks.insert(r);
  }
}

// Communicator block `b` of `size` ranks (global ranks) as records: per
// rank its pg config and an op at the count it launched up to (completed
// unless it is the highest), the unlisted ranks with the count of the one
// group RAS did not list; missing ranks as diagnostics, error ranks as
// crash events.
void EmitBlock(const CommBlock& b, int64_t size, RecordSink* out) {
  std::map<int64_t, int64_t> count_of;  // rank -> op count
  int64_t unlisted_group = -1, unlisted_groups = 0;
  for (size_t i = 0; i < b.counts.size(); ++i) {
    const auto& c = b.counts[i];
    for (int64_t r : c.ranks)
      if (r >= 0 && r < size) count_of[r] = c.op;
    if (static_cast<int64_t>(c.ranks.size()) < c.n) {
      unlisted_group = static_cast<int64_t>(i);
      ++unlisted_groups;
    }
  }
  if (unlisted_groups == 1) {
    for (int64_t r = 0; r < size; ++r)
      if (!count_of.count(r) && !b.missing.count(r)) count_of[r] = b.counts[unlisted_group].op;
  } else if (unlisted_groups > 1) {
    out->Diag(Sev::kWarning,
              "RAS communicator " + b.hash +
                  ": more than one count group lists no ranks; only listed ranks are used (run ncclras -v)");
  }
  int64_t max_op = -1;
  for (const auto& [r, c] : count_of) max_op = std::max(max_op, c);
  std::string op = b.func.empty() ? "" : std::string(NcclOpToTorch(b.func));
  if (op.empty()) op = b.func.empty() ? "unknown" : b.func;
  // One member list, shared by every rank's pg_config.
  std::vector<model::Rank> all(static_cast<size_t>(size));
  for (int64_t k = 0; k < size; ++k) all[k] = k;
  const model::SharedRanks members(std::move(all));
  for (const auto& [r, c] : count_of) {
    model::PgConfig& cfg = out->PgConfig(r, b.hash);
    cfg.desc = "NCCL communicator (RAS group " + std::to_string(b.group) + ")";
    cfg.ranks = members;
    cfg.ranks_known = true;
    if (c <= 0) continue;  // launched nothing: a member with no ops
    model::Interner& pool = out->Strings(r);
    model::OpRecord rec;
    rec.record_id = static_cast<int64_t>(out->OpCount(r));
    rec.pg_name = pool.Str(b.hash);
    rec.collective_seq = c;
    rec.profiling_name = pool.Str("nccl:" + op);
    model::ParseProfilingName(&rec);
    rec.completed = c < max_op;
    rec.retired = rec.completed;
    rec.state = rec.completed ? model::OpState::kCompleted : model::OpState::kStarted;
    out->AddOp(r, rec);
  }
  for (int64_t r : b.missing)
    out->Diag(Sev::kWarning, "RAS: no communicator data from rank " + std::to_string(r) + " of " + b.hash, r);
  for (int64_t r : b.error_ranks) {
    model::LogEvent e;
    e.kind = model::LogEvent::Kind::kCrash;
    e.message = "NCCL RAS reports an error on rank " + std::to_string(r) + " of communicator " + b.hash;
    e.file = out->file();
    e.line = b.line;
    e.pg = b.hash;
    out->AddEvent(r, std::move(e));
  }
}

}  // namespace

int SniffNcclRas(std::string_view data) {
  static const RE2 kHeading(R"re((?m)^#\d+-\d+ \([0-9a-fA-F]{16}\) )re");
  bool heading = Contains(data, "Communicators") || Contains(data, "Job summary");
  bool yes =
      heading && (RE2::PartialMatch(re2::StringPiece(data.data(), std::min<size_t>(data.size(), 1 << 20)), kHeading) ||
                  Contains(data, "Group     Comms"));
  return yes ? 50 : 0;
}

bool ParseNcclRas(const Artifact& in, RecordSink* out) {
  std::string_view data = in.data;
  static const RE2 kComm(R"re(^#(\d+)-(\d+) \(([0-9a-fA-F]{16})\)(.*)$)re");
  std::map<int64_t, int64_t> ranks_per_comm;  // group -> size
  int64_t total_ranks = -1;
  std::vector<CommBlock> blocks;
  List list = List::kNone;
  bool in_table = false, in_summary = false;

  LineReader reader(data);
  for (Line l; reader.Next(&l);) {
    std::string_view raw = l.text;
    std::string_view t = Trim(raw);
    if (t.empty()) {
      in_table = false;
      continue;
    }
    auto f = Fields(t);
    if (t.substr(0, 5) == "Group" && Contains(t, "Comms")) {
      in_table = true;
      continue;
    }
    if (t.substr(0, 7) == "(total)") {
      in_summary = true;
      continue;
    }
    if (in_summary) {
      // "Nodes Processes/node GPUs/process Processes GPUs": the last is the total.
      int64_t v;
      if (f.size() >= 5 && ParseDec(f.back(), &v)) total_ranks = v;
      in_summary = false;
      continue;
    }
    if (in_table) {
      int64_t g, size;
      if (f.size() >= 6 && ParseDec(f[0], &g) && ParseDec(f[4], &size)) ranks_per_comm[g] = size;
      continue;
    }
    std::string hash, rest;
    int64_t g = -1, idx = -1;
    if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), kComm, &g, &idx, &hash, &rest)) {
      CommBlock b;
      b.group = g;
      b.hash = hash;
      b.line = l.number;
      blocks.push_back(std::move(b));
      list = List::kNone;
      continue;
    }
    if (!blocks.empty()) OnBlockLine(t, &blocks.back(), &list);
  }

  // A communicator listed twice (RAS lists each once) is used once, and
  // the rank entries every block expands to (the unlisted ranks of a count
  // group are filled in) are bounded per file: the ASan fuzz campaign's
  // 3 KB input repeated one 64,033-rank block five times (1.7 s, 262 MB).
  constexpr int64_t kMaxRankEntries = int64_t{1} << 18;
  int64_t entries = 0;
  std::set<std::string> seen;
  for (const auto& b : blocks) {
    if (b.counts.empty() && b.error_ranks.empty()) continue;
    if (!seen.insert(b.hash).second) {
      out->Diag(Sev::kWarning, "RAS communicator " + b.hash + " is listed again (line " + std::to_string(b.line) +
                                   "); only its first block is used");
      continue;
    }
    auto sz = ranks_per_comm.find(b.group);
    int64_t size = sz != ranks_per_comm.end() ? sz->second : -1;
    // Every rank of the communicator becomes a dump: bounded, so that a
    // hostile size cannot exhaust memory (found by nccl_ras_fuzzer).
    if (size <= 0 || size > (1 << 17)) {
      out->Diag(Sev::kWarning, "RAS communicator " + b.hash + ": size unknown; its operation counts are not used");
      continue;
    }
    if (total_ranks > 0 && size != total_ranks) {
      out->Diag(Sev::kInfo,
                "RAS communicator " + b.hash + " has " + std::to_string(size) + " of " + std::to_string(total_ranks) +
                    " ranks; its ranks are communicator ranks, not global ranks, so its operation counts are not used");
      continue;
    }
    if (entries + size > kMaxRankEntries) {
      out->Diag(Sev::kWarning, "RAS communicator " + b.hash + ": the report's communicators add up to more than " +
                                   std::to_string(kMaxRankEntries) + " rank entries; this one and the rest are not used");
      break;
    }
    entries += size;
    EmitBlock(b, size, out);
  }
  return true;
}

}  // namespace hangdx::ingest
