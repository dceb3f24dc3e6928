#include "hangdx/pipeline/pipeline.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <thread>

#include "hangdx/analyze/records_needed.h"
#include "hangdx/base/memory_reserve.h"
#include "hangdx/ingest/compact.h"
#include "hangdx/ingest/cross_rank.h"
#include "hangdx/ingest/explain.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/messages/describe.h"
#include "hangdx/report/report.h"

namespace hangdx::pipeline {
namespace {

// "dumps/" or "dumps/ and 3 more paths": the input of a stage, for its
// out-of-memory message.
std::string PathsWords(const std::vector<std::string>& paths) {
  std::string s = paths.empty() ? "no path" : paths.front();
  if (paths.size() > 1) s += " and " + std::to_string(paths.size() - 1) + " more paths";
  return s;
}

// Runs one stage; out of memory in it (std::bad_alloc, or a container
// asked to grow past its limits) becomes kResourceExhausted naming the
// stage, so the front-ends report it and exit 2 instead of aborting. The
// loader already turns one file's exhaustion into a diagnostic for that
// file; this catches the rest (merging, analysis, rendering).
template <typename T, typename F>
StatusOr<T> Guarded(const std::string& stage, F f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  RefillMemoryReserve();  // what the stage built is freed by now
  return ResourceExhausted("out of memory while " + stage);
}

// Loads `paths` and runs the cross-rank passes (the first stage of every
// command).
StatusOr<model::Job> Load(const std::vector<std::string>& paths, const PipelineOptions& options) {
  return Guarded<model::Job>("reading " + PathsWords(paths), [&]() -> StatusOr<model::Job> {
    StatusOr<model::Job> job = ingest::LoadJob(paths, options.load);
    if (job.ok()) ingest::InferAcrossRanks(&*job);
    return job;
  });
}

// "3 ranks and 2 device jobs read from dumps/".
std::string JobWords(const model::Job& job, const std::vector<std::string>& paths) {
  return std::to_string(job.dumps.size()) + " ranks and " + std::to_string(job.device.size()) +
         " device jobs read from " + PathsWords(paths);
}

}  // namespace

StatusOr<analyze::Diagnosis> Diagnose(const std::vector<std::string>& paths, const PipelineOptions& options) {
  if (paths.empty()) return InvalidArgument("no input paths given");
  // Records are cut down as files are read, and the few the analysis reads
  // one by one are read back before it runs (ingest/compact.h).
  PipelineOptions cut = options;
  cut.load.compact = true;
  StatusOr<model::Job> job = Load(paths, cut);
  if (!job.ok()) return job.status();
  int threads = cut.load.threads > 0 ? cut.load.threads : static_cast<int>(std::thread::hardware_concurrency());
  return Guarded<analyze::Diagnosis>("analyzing the " + JobWords(*job, paths), [&] {
    ingest::ReadBack(&*job, analyze::RecordsNeeded(*job), threads);
    return analyze::Analyze(*job, options.analyze);
  });
}

StatusOr<std::string> Stacks(const std::vector<std::string>& paths, const PipelineOptions& options,
                             const std::string& format) {
  if (format != "text" && format != "json")
    return InvalidArgument("unknown format '" + format + "' for stacks (want text or json)");
  if (paths.empty()) return InvalidArgument("no input paths given");
  StatusOr<model::Job> job = Load(paths, options);
  if (!job.ok()) return job.status();
  return Guarded<std::string>("merging the stacks of the " + JobWords(*job, paths), [&] {
    analyze::StackTree tree = analyze::MergeStacks(*job);
    return format == "json" ? report::RenderStacksJson(tree) : report::RenderStacksText(tree);
  });
}

StatusOr<std::string> Render(const analyze::Diagnosis& d, const std::string& format) {
  if (format != "text" && format != "json" && format != "dot")
    return InvalidArgument("unknown format '" + format + "' (want text, json or dot)");
  return Guarded<std::string>("rendering the " + format + " report of " + std::to_string(d.ranks.size()) + " ranks",
                              [&] {
                                if (format == "text") return report::RenderText(d);
                                if (format == "json") return report::RenderJson(d);
                                return report::RenderDot(d);
                              });
}

std::vector<InputFormat> InputFormats() {
  std::vector<InputFormat> out;
  for (const ingest::Format& f : ingest::Formats()) out.push_back({std::string(f.name), std::string(f.description)});
  return out;
}

std::string FormatsText() {
  std::vector<InputFormat> formats = InputFormats();
  size_t width = 0;
  for (const auto& f : formats) width = std::max(width, f.name.size());
  std::string out;
  for (const auto& f : formats) out += f.name + std::string(width + 2 - f.name.size(), ' ') + f.description + "\n";
  return out;
}

std::string MessagesTable() { return ingest::messages::CatalogueTable(ingest::messages::Catalogue::Builtin()); }

std::string MessagesMarkdown() { return ingest::messages::CatalogueMarkdown(ingest::messages::Catalogue::Builtin()); }

StatusOr<std::string> ExplainMessages(const std::vector<std::string>& paths, const PipelineOptions& options) {
  return ingest::ExplainMessages(paths, options.load);
}

int ExitCode(const analyze::Diagnosis& d) {
  if (d.verdict.rfind("No usable input", 0) == 0) return 2;
  // Without any rank's records, only a job-wide report's finding or messages
  // that claim no hang make an answer.
  if (d.ranks.empty() && d.findings.empty() && d.verdict.rfind("No hang found", 0) != 0) return 2;
  return d.hang ? 1 : 0;
}

}  // namespace hangdx::pipeline
