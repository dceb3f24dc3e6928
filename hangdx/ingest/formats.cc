#include "hangdx/ingest/formats.h"

#include "hangdx/base/mapped_file.h"
#include "hangdx/ingest/formats/device_json/device_json.h"
#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"
#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"
#include "hangdx/ingest/formats/messages/messages.h"
#include "hangdx/ingest/formats/nccl_log/nccl_log.h"
#include "hangdx/ingest/formats/nccl_ras/nccl_ras.h"
#include "hangdx/ingest/formats/stack_dump/stack_dump.h"
#include "hangdx/ingest/formats/torch_log/torch_log.h"
#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"
#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {
namespace {

using Kind = Format::Kind;
using Sev = model::Diagnostic::Severity;

// The only list of formats. Exclusive formats first; text formats run in
// this order on a file (records of one rank land in one dump, numbered in
// this order).
constexpr Format kFormats[] = {
    {kFrPickle, "PyTorch Flight Recorder dump, pickle (protocols 2-5, dump versions 2.2-2.10)", Kind::kExclusive,
     SniffFlightRecorderPickle, ParseFlightRecorderPickle},
    {kFrJson, "PyTorch Flight Recorder dump, JSON (dump versions 2.2-2.10)", Kind::kExclusive, SniffFlightRecorderJson,
     ParseFlightRecorderJson},
    {kDeviceJson, "hangdx device schedule or snapshot ({\"hangdx_snapshot\": 1, ...}, docs/snapshot-format.md)",
     Kind::kExclusive, SniffDeviceJson, ParseDeviceJson},
    {kWaitSnapshot, "live wait snapshot ({\"<rank>\": {\"current_op\", \"waiting_for_ranks\", \"op_seq\"}})",
     Kind::kExclusive, SniffWaitSnapshot, ParseWaitSnapshot},
    {kNcclRas, "NCCL RAS status report (ncclras, NCCL 2.24+)", Kind::kText, SniffNcclRas, ParseNcclRas},
    {kNcclLog, "NCCL_DEBUG=INFO log (Init, COLL enqueue and WARN lines)", Kind::kText, SniffNcclLog, ParseNcclLog},
    {kTorchLog, "PyTorch c10d messages: watchdog timeouts, DETAIL mismatches, crashes, tracebacks", Kind::kText,
     SniffTorchLog, ParseTorchLog},
    {kHcclPlog, "Ascend HCCL plog and CANN console errors (notify-wait timeouts, task exceptions)", Kind::kText,
     SniffHcclPlog, ParseHcclPlog},
    {kStackDump, "py-spy (text or JSON), gdb or faulthandler stack dump", Kind::kText, SniffStackDump, ParseStackDump},
    // Last: the formats above keep their record numbering, and own the
    // catalogue rows they read (a row's `reader`).
    {kMessages,
     "hang messages of PyTorch c10d, NCCL/RCCL, HCCL, Horovod, DeepSpeed, Megatron, vLLM, SGLang, Ray, TensorFlow "
     "(the message catalogue: hangdx messages)",
     Kind::kText, SniffMessages, ParseMessages},
};

// "binary data", "UTF-16 text (read as its ASCII characters)": what a
// skipped file held, for its message.
std::string SkipMessage(logs::TextEncoding enc) {
  const char* what = enc == logs::TextEncoding::kBinary  ? "binary data, "
                     : enc == logs::TextEncoding::kUtf16 ? "UTF-16 text (read as its ASCII characters), "
                                                         : "";
  return std::string(what) + "not a format hangdx reads (" + FormatNames() + "; see hangdx formats); skipped";
}

// Adds format `name` to the formats that read the file ("torch-log, messages").
void AddReader(model::FileRead* read, std::string_view name) {
  if (!read->format.empty()) read->format += ", ";
  read->format += name;
}

// Runs every text format that recognizes `in.data`; false when none does.
bool ReadText(const Artifact& in, RecordSink* out) {
  if (logs::LooksBinary(in.data)) return false;
  bool any = false;
  for (const Format& f : kFormats) {
    if (f.kind != Kind::kText) continue;
    bool read = f.sniff(in.data) > 0 && f.parse(in, out);
    // Each pass reads the file from the start: what it left resident goes
    // (a text format's LineReader releases as it reads; a sniffer may not).
    ReleaseReadPages(in.data);
    if (!read) continue;
    AddReader(&out->Reading(), f.name);
    any = true;
  }
  if (!any || !out->empty()) return any;
  // A format's sniff accepted the text but nothing was recorded: recognized
  // only if some message of the catalogue was (then its rank is unknown);
  // otherwise the file is skipped with what it resembles.
  const model::FileRead& read = out->Reading();
  if (read.messages.empty()) {
    out->Reading().format.clear();
    return false;
  }
  out->Diag(Sev::kInfo,
            "recognized " + std::to_string(read.messages.size()) +
                " kind(s) of message (first: " + read.messages.front().message_id + ", " + read.messages.front().event +
                "), but none names a rank hangdx can tell (hangdx messages FILE shows them)",
            in.rank_hint);
  return true;
}

}  // namespace

std::span<const Format> Formats() { return kFormats; }

const Format* FindFormat(std::string_view name) {
  for (const Format& f : kFormats)
    if (f.name == name) return &f;
  return nullptr;
}

std::string FormatNames() {
  std::string s;
  for (const Format& f : kFormats) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

bool IsFlightRecorderDumpName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // TORCH_FR_DUMP_TEMP_FILE (TORCH_NCCL_DEBUG_INFO_TEMP_FILE before 2.5)
  // defaults to /tmp/nccl_trace_rank_ and the rank is appended; users and
  // the docs use fr_trace_rank_.
  size_t at = base.find("trace_rank_");
  if (at == std::string_view::npos) return false;
  // The rank follows, sometimes after a host name (nccl_trace_rank_node02_5).
  std::string_view rest = base.substr(at + std::string_view("trace_rank_").size());
  return rest.find_first_of("0123456789") != std::string_view::npos;
}

ArtifactResult ReadArtifact(const Artifact& given, RecordSink* out) {
  using Outcome = ArtifactResult::Outcome;
  ArtifactResult res;
  // A UTF-8 byte order mark (editors on Windows write one before JSON and
  // logs) is no part of any format: read what follows it.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  Artifact in = given;
  if (in.data.substr(0, kBom.size()) == kBom) in.data.remove_prefix(kBom.size());
  if (in.data.empty() && IsFlightRecorderDumpName(in.path)) {
    // A dump torch began and never finished (the rank was killed while
    // writing it, or the disk was full): PyTorch writes a pickle even with
    // the recorder off (pg_config {}, no entries), never 0 bytes. Unreadable,
    // like a truncated dump, not "records nothing" (the fresh-user tester's
    // empty fr_trace_rank_2 had turned a hang into exit 0).
    out->Diag(Sev::kWarning,
              "empty Flight Recorder dump (0 bytes): its rank was killed while writing it, or the disk was full",
              -1, 0);
    res.outcome = Outcome::kUnreadable;
    return res;
  }
  if (in.data.empty()) {
    // A note, not a warning: an empty file claims nothing, and launchers
    // leave them as a matter of course (torchrun --log-dir writes a
    // stdout.log per worker, empty when the worker prints only to stderr).
    // It is counted (InputStats::empty) and listed, never dropped silently.
    out->Diag(Sev::kInfo, "empty file; skipped", -1, 0);
    res.outcome = Outcome::kSkipped;
    res.empty = true;
    return res;
  }
  int best = 0;
  for (const Format& f : kFormats) {
    if (f.kind != Kind::kExclusive) continue;
    int confidence = f.sniff(in.data);
    if (confidence > best) best = confidence, res.format = &f;
  }
  if (res.format) {
    if (!res.format->parse(in, out))
      res.outcome = Outcome::kUnreadable;
    else
      AddReader(&out->Reading(), res.format->name);
    return res;
  }
  // Binary that no exclusive format claims (NUL or control bytes in its
  // head) is no text log either: skipped without reading the rest (a 2 GB
  // sparse file stays unread). NUL padding (a crashed process's log) is
  // dropped, UTF-16 is read as its ASCII subset.
  std::string decoded;
  logs::TextEncoding enc = logs::DecodeText(in.data, &decoded);
  if (enc != logs::TextEncoding::kBinary) {
    Artifact text = in;
    if (enc != logs::TextEncoding::kText) text.data = decoded;
    if (ReadText(text, out)) {
      if (enc == logs::TextEncoding::kUtf16)
        out->Diag(Sev::kInfo, "UTF-16 text: read its ASCII characters (offsets count those characters)");
      else if (enc == logs::TextEncoding::kNulPadded)
        out->Diag(Sev::kInfo, "holds NUL bytes (padding of a crashed process's log?): read without them");
      return res;
    }
  }
  std::string near = enc == logs::TextEncoding::kBinary ? "" : NearMiss(decoded.empty() ? in.data : decoded);
  out->Reading().looks_like = near;
  out->Diag(Sev::kInfo, near.empty() ? SkipMessage(enc) : SkipMessage(enc) + "; it " + near);
  res.outcome = Outcome::kSkipped;
  return res;
}

}  // namespace hangdx::ingest
