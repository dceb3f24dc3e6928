#include "hangdx/pipeline/pipeline.h"

#include <algorithm>

#include "hangdx/ingest/cross_rank.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/report/report.h"

namespace hangdx::pipeline {

StatusOr<analyze::Diagnosis> Diagnose(const std::vector<std::string>& paths, const PipelineOptions& options) {
  if (paths.empty()) return InvalidArgument("no input paths given");
  StatusOr<model::Job> job = ingest::LoadJob(paths, options.load);
  if (!job.ok()) return job.status();
  ingest::InferAcrossRanks(&*job);
  return analyze::Analyze(*job, options.analyze);
}

StatusOr<std::string> Stacks(const std::vector<std::string>& paths, const PipelineOptions& options,
                             const std::string& format) {
  if (format != "text" && format != "json")
    return InvalidArgument("unknown format '" + format + "' for stacks (want text or json)");
  if (paths.empty()) return InvalidArgument("no input paths given");
  StatusOr<model::Job> job = ingest::LoadJob(paths, options.load);
  if (!job.ok()) return job.status();
  ingest::InferAcrossRanks(&*job);
  analyze::StackTree tree = analyze::MergeStacks(*job);
  return format == "json" ? report::RenderStacksJson(tree) : report::RenderStacksText(tree);
}

StatusOr<std::string> Render(const analyze::Diagnosis& d, const std::string& format) {
  if (format == "text") return report::RenderText(d);
  if (format == "json") return report::RenderJson(d);
  if (format == "dot") return report::RenderDot(d);
  return InvalidArgument("unknown format '" + format + "' (want text, json or dot)");
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

int ExitCode(const analyze::Diagnosis& d) {
  if (d.ranks.empty() || d.verdict.rfind("No usable input", 0) == 0) return 2;
  return d.hang ? 1 : 0;
}

}  // namespace hangdx::pipeline
