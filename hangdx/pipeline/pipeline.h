// hangdx/pipeline/pipeline.h
// The single facade every front-end (CLI, Python, later the watchdog
// service) calls: paths in, a Diagnosis and its rendering out.
//
//   PipelineOptions opt;
//   StatusOr<analyze::Diagnosis> d = Diagnose({"dumps/"}, opt);
//   std::string text = Render(*d, "text");
#pragma once

#include <string>
#include <vector>

#include "hangdx/analyze/analyze.h"
#include "hangdx/base/status.h"
#include "hangdx/ingest/load.h"

namespace hangdx::pipeline {

struct PipelineOptions {
  ingest::LoadOptions load;
  analyze::AnalyzeOptions analyze;
};

// Loads every path (file or folder) and analyzes the job. Errors only for
// unusable invocations (kNotFound: no path exists; kInvalidArgument: a
// rank or world size out of range) and kResourceExhausted when memory runs
// out (the message names the stage and the input); unreadable files, and a
// file whose reading ran out of memory, are diagnostics inside the
// Diagnosis.
StatusOr<analyze::Diagnosis> Diagnose(const std::vector<std::string>& paths, const PipelineOptions& options);

// Loads every path and merges all ranks' stacks into one tree (hangdx
// stacks), rendered as "text" or "json". Errors as Diagnose, plus
// kInvalidArgument for another format.
StatusOr<std::string> Stacks(const std::vector<std::string>& paths, const PipelineOptions& options,
                             const std::string& format);

// Renders as "text", "json" or "dot". Errors: kInvalidArgument for another
// format, kResourceExhausted when memory runs out.
StatusOr<std::string> Render(const analyze::Diagnosis& d, const std::string& format);

// One input format hangdx reads (a row of ingest/formats.h).
struct InputFormat {
  std::string name;         // "nccl-log"
  std::string description;  // one line: what produces it
};

// Every input format, in the order the loader sniffs them.
std::vector<InputFormat> InputFormats();

// The formats as `hangdx formats` prints them and the README lists them:
// one "<name>  <description>" line each, names padded to one column.
std::string FormatsText();

// The message catalogue (`hangdx messages`): one line per row (id,
// producer, versions, event, reader), and docs/field-messages.md
// (`hangdx messages --markdown`).
std::string MessagesTable();
std::string MessagesMarkdown();

// What hangdx recognizes in each file of `paths` (`hangdx messages FILE...`):
// every known message with its row, captures and rank, or the producer a
// file resembles. Errors as Diagnose.
StatusOr<std::string> ExplainMessages(const std::vector<std::string>& paths, const PipelineOptions& options);

// Process exit code for a diagnosis: 0 nothing wrong found, 1 a hang or
// mismatch found, 2 unusable input (no rank's records could be read, unless
// the messages read in the files claim no hang: then 0).
int ExitCode(const analyze::Diagnosis& d);

}  // namespace hangdx::pipeline
