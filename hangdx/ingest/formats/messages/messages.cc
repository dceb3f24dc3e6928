#include "hangdx/ingest/formats/messages/messages.h"

#include <algorithm>
#include <map>

#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/formats/messages/handlers.h"
#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using messages::CompiledCatalogue;
using messages::MessageMatch;
using messages::MessageMatcher;
using messages::Row;
using messages_format::Attribution;
using messages_format::FileFacts;
using messages_format::Handlers;
using Sev = model::Diagnostic::Severity;

constexpr size_t kMaxKeptMatches = 1 << 20;  // handled messages per file; the rest are counted only
constexpr int64_t kNearMissLines = 100000;   // lines NearMiss looks at
constexpr size_t kSpecificAnchor = 12;       // anchors at least this long name their message
constexpr std::string_view kMessagesFormat = "messages";

// Which formats of the table read this file (their sniff accepts it): a
// row they own is theirs to record here.
class Owners {
 public:
  explicit Owners(std::string_view data) : data_(data) {}
  // True when `reader` (a row's reader: a format name, "" = this format)
  // reads the file.
  bool Reads(const std::string& reader) {
    if (reader.empty() || reader == kMessagesFormat) return false;
    auto it = reads_.find(reader);
    if (it != reads_.end()) return it->second;
    const Format* f = FindFormat(reader);
    bool yes = f != nullptr && f->kind == Format::Kind::kText && f->sniff(data_) > 0;
    return reads_.emplace(reader, yes).first->second;
  }

 private:
  std::string_view data_;
  std::map<std::string, bool> reads_;
};

// Per row: how often it matched and where first.
struct RowCount {
  int64_t count = 0, first_line = -1;
};

// CloudWatch exports put the time on a line of its own between messages
// ("2024-12-04T05:27:39.073Z"): such a line is no message and must not
// close an open block.
bool TimestampOnly(std::string_view t) {
  if (t.size() < 19 || t.size() > 40 || t[4] != '-' || t[7] != '-') return false;
  for (char c : t)
    if (!((c >= '0' && c <= '9') || c == '-' || c == ':' || c == '.' || c == 'T' || c == 'Z' || c == '+' || c == ' '))
      return false;
  return true;
}

// One pass over the lines of `data`: every recognized message goes to
// `each(match)`; `facts` observes every line. Returns the lines read and
// sets *recognized to the lines that were part of a message.
template <typename Each>
int64_t ScanLines(std::string_view data, MessageMatcher* matcher, FileFacts* facts, int64_t* recognized, Each each) {
  std::vector<MessageMatch> found;
  logs::LineReader reader(data);
  int64_t lines = 0;
  *recognized = 0;
  for (logs::Line l; reader.Next(&l);) {
    ++lines;
    facts->Observe(l);
    if (TimestampOnly(l.text)) continue;
    if (matcher->Feed(l, &found, &facts->Tags())) ++*recognized;
    for (MessageMatch& m : found) each(std::move(m));
    found.clear();
  }
  matcher->Finish(&found);
  for (MessageMatch& m : found) each(std::move(m));
  return lines;
}

// The line of `data` that starts at `offset`, as written (prefixes and all).
std::string_view RawLine(std::string_view data, int64_t offset) {
  if (offset < 0 || static_cast<size_t>(offset) >= data.size()) return {};
  std::string_view rest = data.substr(static_cast<size_t>(offset));
  return rest.substr(0, rest.find('\n'));
}

// A JSON document (a case's expected.json, a config dump) is no log, even
// when a string in it quotes a message: its first line opens an object or
// an array that it does not close. JSON-lines logs (each line an object)
// and log lines that start with a bracket ("[rank1]:...") still are logs.
bool JsonDocument(std::string_view data) {
  size_t first = data.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  size_t eol = data.find('\n', first);
  std::string_view line = data.substr(first, eol == std::string_view::npos ? std::string_view::npos : eol - first);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line == "{" || line == "[") return true;
  if (line.size() < 2) return false;
  bool opens =
      (line[0] == '{' && line[1] == '"') || (line[0] == '[' && (line[1] == '{' || line[1] == '"' || line[1] == '['));
  return opens && line.back() != '}' && line.back() != ']';
}

size_t RowIndex(const Row* row) { return static_cast<size_t>(row - messages::Catalogue::Builtin().rows().data()); }

// The file's FileRead entries for its rows, in order of first line, and a
// diagnostic per row whose messages named no rank.
void Summarize(const std::vector<RowCount>& counts, const Handlers& handlers, RecordSink* out) {
  const auto& rows = messages::Catalogue::Builtin().rows();
  std::vector<size_t> order;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i].count > 0) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return counts[a].first_line < counts[b].first_line; });
  model::FileRead& read = out->Reading();
  for (size_t i : order) {
    const Row& row = rows[i];
    model::RecognisedMessage m;
    m.message_id = row.id;
    m.event = messages::EventKindName(row.event);
    m.proves = row.proves;
    m.count = counts[i].count;
    int64_t unranked = handlers.Unranked(&row);
    bool claim = row.event != messages::EventKind::kInfo && row.event != messages::EventKind::kConfig &&
                 row.event != messages::EventKind::kProgress && row.event != messages::EventKind::kInit;
    if (unranked > 0 && claim)
      out->Diag(Sev::kInfo, std::to_string(unranked) + " " + row.producer + " message(s) " + row.id + " (" + m.event +
                                ", first on line " + std::to_string(counts[i].first_line) +
                                ") name no rank hangdx can tell: no rank prefix, no rank in the text or the file name; "
                                "not used (pass --rank FILE=RANK if the file is one rank's)");
    read.messages.push_back(std::move(m));
  }
}

}  // namespace

int SniffMessages(std::string_view data) {
  return !JsonDocument(data) && CompiledCatalogue::Builtin().AnyAnchor(data) ? 40 : 0;
}

bool ParseMessages(const Artifact& in, RecordSink* out) {
  const CompiledCatalogue& compiled = CompiledCatalogue::Builtin();
  Owners owners(in.data);
  MessageMatcher matcher(compiled);
  // An owned timeout is captured too: the messages after it may take its pg
  // (TimeoutPgs), though its reader records it.
  auto mine = [&](const Row& row) { return !owners.Reads(row.reader); };
  matcher.SetWanted([&](const Row& row) { return mine(row) || row.event == messages::EventKind::kTimeout; });
  FileFacts facts;
  std::vector<RowCount> counts(messages::Catalogue::Builtin().rows().size());
  std::vector<MessageMatch> kept;
  std::vector<bool> handle;  // per kept match: recorded here (else context only)
  int64_t dropped = 0, recognized = 0;
  ScanLines(in.data, &matcher, &facts, &recognized, [&](MessageMatch&& m) {
    RowCount& c = counts[RowIndex(m.row)];
    if (c.count++ == 0) c.first_line = m.line;
    if (!m.captured) return;  // its reader records it
    if (kept.size() < kMaxKeptMatches) {
      handle.push_back(mine(*m.row));
      kept.push_back(std::move(m));
    } else {
      ++dropped;
    }
  });
  if (recognized == 0) return false;
  facts.Finish(in.rank_hint);
  Handlers handlers(out);
  messages_format::TimeoutPgs pgs;
  for (size_t i = 0; i < kept.size(); ++i) {
    const MessageMatch& m = kept[i];
    Attribution who = messages_format::Attribute(m, facts);
    pgs.Apply(m, &who);
    if (!handle[i]) continue;
    for (const std::string& p : m.problems)
      out->Diag(Sev::kWarning, "line " + std::to_string(m.line) + ": " + m.row->id + ": " + p, -1, m.offset);
    handlers.Handle({&m, std::move(who), logs::LineTimeNs(RawLine(in.data, m.offset))});
  }
  handlers.AddOrderlyEnds(facts);
  handlers.Finish();
  if (dropped > 0)
    out->Diag(Sev::kWarning, std::to_string(dropped) + " recognized messages past the first " +
                                 std::to_string(kMaxKeptMatches) + " were counted, not read");
  Summarize(counts, handlers, out);
  return true;
}

std::vector<Recognized> ScanMessages(const Artifact& in, int64_t* lines) {
  Owners owners(in.data);
  MessageMatcher matcher(CompiledCatalogue::Builtin());
  FileFacts facts;
  std::vector<Recognized> out;
  int64_t recognized = 0;
  int64_t n = ScanLines(in.data, &matcher, &facts, &recognized, [&](MessageMatch&& m) {
    Recognized r;
    r.reader = owners.Reads(m.row->reader) ? m.row->reader : std::string(kMessagesFormat);
    r.match = std::move(m);
    out.push_back(std::move(r));
  });
  facts.Finish(in.rank_hint);
  messages_format::TimeoutPgs pgs;
  for (Recognized& r : out) {
    r.who = messages_format::Attribute(r.match, facts);
    pgs.Apply(r.match, &r.who);
  }
  if (lines) *lines = n;
  return out;
}

namespace {

// A producer family: the first part of its rows' ids, its name, and words
// its output holds even when no message of it was recognized.
struct Family {
  std::string_view id, name;
  std::vector<std::string_view> markers;
};
const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"nccl", "NCCL", {" NCCL INFO ", " NCCL WARN ", "opCount", "ncclComm", "NCCL version"}},
      {"rccl", "RCCL", {"RCCL", "rccl"}},
      {"torch",
       "PyTorch c10d",
       {"ProcessGroupNCCL", "ProcessGroupGloo", "c10d", "torch.distributed", "DistBackendError"}},
      {"hccl", "Ascend HCCL", {"HCCL", "EI00", "Notify"}},
      {"torch_npu", "torch_npu", {"torch_npu", "ProcessGroupHCCL"}},
      {"horovod", "Horovod", {"horovod", "Horovod"}},
      {"deepspeed", "DeepSpeed", {"deepspeed", "DeepSpeed"}},
      {"megatron", "Megatron-LM", {"megatron", "Megatron"}},
      {"nvrx", "NVIDIA Resiliency Extension", {"nvidia_resiliency_ext", "rank_monitor"}},
      {"vllm", "vLLM", {"vllm", "vLLM", "VllmWorker", "EngineCore"}},
      {"sglang", "SGLang", {"sglang", "SGLang"}},
      {"ray", "Ray", {"ray.", "(raylet)", "RayTrainWorker"}},
      {"torchtitan", "torchtitan", {"torchtitan"}},
  };
  return kFamilies;
}

const Family* FamilyOf(const Row& row) {
  std::string_view id = row.id;
  std::string_view head = id.substr(0, id.find('.'));
  for (const Family& f : Families())
    if (f.id == head) return &f;
  return nullptr;
}

std::string Quote(std::string_view t) {
  std::string s(t.substr(0, 160));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return "'" + s + (t.size() > 160 ? "...'" : "'");
}

}  // namespace

std::string NearMiss(std::string_view data) {
  const CompiledCatalogue& compiled = CompiledCatalogue::Builtin();
  if (logs::LooksBinary(data)) return "";
  // A JSON document that no format reads (a case's expected.json) is no log.
  std::string_view whole = logs::Trim(data);
  if (JsonDocument(data) || (whole.starts_with('{') && whole.ends_with('}'))) return "";
  // A line with a row's anchor that no row's pattern matched is the closest
  // miss; failing that, the family whose words most lines hold.
  std::vector<const Row*> hit;
  std::string first_miss;
  std::map<const Family*, std::pair<int64_t, std::string>> marked;  // lines, first line quoted
  logs::LineReader reader(data);
  std::vector<const Row*> rows;
  for (logs::Line l; reader.Next(&l) && l.number <= kNearMissLines;) {
    if (l.text.empty()) continue;
    if (first_miss.empty()) {
      rows.clear();
      compiled.RowsWithAnchor(l.text, &rows);
      // Short anchors ("nccl", "->") occur in any prose: only a specific
      // one makes a line a miss of that message.
      std::erase_if(rows, [](const Row* r) { return r->anchor.size() < kSpecificAnchor; });
      if (!rows.empty()) {
        hit = rows;
        first_miss = "line " + std::to_string(l.number) + " " + Quote(l.text);
      }
    }
    for (const Family& f : Families())
      for (std::string_view w : f.markers)
        if (l.text.find(w) != std::string_view::npos) {
          auto& [n, first] = marked[&f];
          if (n++ == 0) first = "line " + std::to_string(l.number) + " " + Quote(l.text);
          break;
        }
  }
  if (!hit.empty()) {
    const Row& row = *hit.front();
    const Family* f = FamilyOf(row);
    std::string ids;
    for (size_t i = 0; i < hit.size() && i < 3; ++i) ids += (i ? ", " : "") + hit[i]->id;
    return "looks like " + std::string(f ? f->name : row.producer) + " output: " + first_miss + " holds '" +
           row.anchor + "' of " + ids +
           ", but not in a wording hangdx knows (a cut line, or a release the "
           "catalogue does not have)";
  }
  const Family* best = nullptr;
  int64_t most = 0;
  for (const auto& [f, v] : marked)
    if (v.first > most) most = v.first, best = f;
  if (best == nullptr) return "";
  return "looks like " + std::string(best->name) + " output (" + std::to_string(most) +
         " line(s) name it; first: " + marked[best].second + "), but no line is a " + std::string(best->name) +
         " message hangdx knows";
}

}  // namespace hangdx::ingest
