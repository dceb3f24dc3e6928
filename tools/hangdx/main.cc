// hangdx: the command line. Thin: parses flags, calls pipeline::Diagnose,
// prints. Exit codes: 0 nothing wrong found, 1 a hang or mismatch found,
// 2 unusable input or usage error.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string_view>

#include "hangdx/base/memory_reserve.h"
#include "hangdx/pipeline/pipeline.h"
#include "hangdx/sim/simulate.h"
#include "tools/hangdx/messages_main.h"
#include "tools/hangdx/output.h"
#include "tools/hangdx/watch_main.h"

namespace {

using hangdx::tools::WriteOut;

// A one-line progress bar on stderr, shown only on a terminal and only when
// reading takes more than a second.
class Progress {
 public:
  void operator()(size_t done, size_t total, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1) || (now - last_ < std::chrono::milliseconds(100) && done < total))
      return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\rhangdx: read %zu/%zu files (%.1f MB)", done, total, bytes / 1e6);
    std::fflush(stderr);
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
  bool shown_ = false;
};

// True when `output` names an existing file that is one of `inputs` (so
// `-o` would overwrite a rank's dump).
bool IsOneOf(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (output.empty() || output == "-" || !std::filesystem::exists(output, ec)) return false;
  for (const auto& in : inputs)
    if (std::filesystem::equivalent(output, in, ec)) return true;
  return false;
}

int RunAnalyze(const std::vector<std::string>& paths, const std::string& format, const std::string& output,
               hangdx::pipeline::PipelineOptions options) {
  Progress progress;
  if (::isatty(STDERR_FILENO))
    options.load.progress = [&progress](size_t d, size_t t, uint64_t b) { progress(d, t, b); };
  auto d = hangdx::pipeline::Diagnose(paths, options);
  options.load.progress = nullptr;
  if (!d.ok()) {
    std::cerr << "hangdx: " << d.status().message() << "\n";
    return 2;
  }
  if (IsOneOf(output, d->files)) {
    std::cerr << "hangdx: -o " << output << " is one of the inputs; not overwriting it\n";
    return 2;
  }
  auto text = hangdx::pipeline::Render(*d, format);
  if (!text.ok()) {
    std::cerr << "hangdx: " << text.status().message() << "\n";
    return 2;
  }
  int rc = WriteOut(*text, output);
  return rc ? rc : hangdx::pipeline::ExitCode(*d);
}

// hangdx simulate: 0 no deadlock found, 1 a deadlock, 2 bad input.
int RunSimulate(const std::string& path, const std::string& format, const hangdx::sim::SimulateOptions& options) {
  hangdx::model::DiagnosticSink notes;
  auto job = hangdx::sim::LoadSchedule(path, &notes);
  for (const auto& n : notes.Take()) std::cerr << "hangdx: note: " << path << ": " << n.message << "\n";
  if (!job.ok()) {
    std::cerr << "hangdx: " << job.status().message() << "\n";
    return 2;
  }
  auto report = hangdx::sim::Simulate(*job, options);
  if (!report.ok()) {
    std::cerr << "hangdx: " << path << ": " << report.status().message() << "\n";
    return 2;
  }
  std::string text = format == "json" ? hangdx::sim::RenderJson(*report) : hangdx::sim::RenderText(*report);
  int rc = WriteOut(text, "");
  return rc ? rc : hangdx::sim::ExitCode(*report);
}

// Splits a --rank value "FILE=RANK" at its last '='. False unless RANK is
// all digits and below model::kMaxRank ("5x", "-1" and 2^62 are refused:
// a rank number no job has would make every later rank list that long).
bool ParseRankOverride(const std::string& value, std::string* file, int64_t* rank) {
  size_t eq = value.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  std::string_view digits = std::string_view(value).substr(eq + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *rank);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || digits[0] == '-') return false;
  if (*rank < 0 || *rank >= hangdx::model::kMaxRank) return false;
  *file = value.substr(0, eq);
  return true;
}

// What the command is doing, for the out-of-memory message of main():
// "analyze dumps/", "simulate s.json". Set once the flags are parsed.
std::string g_doing = "hangdx";

int Main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "watch") return hangdx::tools::WatchMain(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "messages") return hangdx::tools::MessagesMain(argc - 1, argv + 1);
  CLI::App app{"hangdx: names the hang in a distributed deep-learning job from what its ranks left behind", "hangdx"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("hangdx 0.1.0"));
  // watch has its own parser (watch_main.cc); say here that it exists.
  app.footer(
      "\nhangdx watch --help: watch a running job and name its hang as it happens (docs/live.md)"
      "\nhangdx messages --help: what hangdx recognizes in a log, line by line, and the catalogue of producers' "
      "messages (docs/field-messages.md)");

  auto* analyze = app.add_subcommand("analyze", "Diagnose a hang from per-rank dumps (files or folders)");
  std::vector<std::string> paths;
  std::string format = "text", output;
  std::vector<std::string> rank_overrides;
  hangdx::pipeline::PipelineOptions options;
  std::string format_names;
  for (const auto& f : hangdx::pipeline::InputFormats()) format_names += (format_names.empty() ? "" : ", ") + f.name;
  analyze
      ->add_option("PATH", paths,
                   "Files or folders (searched recursively) of what the ranks left behind; each file's format is "
                   "sniffed from its content: " +
                       format_names + " (hangdx formats describes them)")
      ->required();
  analyze->add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json", "dot"}));
  analyze->add_option("-o,--output", output, "Write the report to FILE instead of stdout");
  analyze
      ->add_option("--world-size", options.load.world_size, "Number of ranks in the job (gloo dumps do not record it)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  analyze->add_option("--rank", rank_overrides, "FILE=RANK: the rank of a dump whose name does not say it");
  analyze->add_option("-j,--threads", options.load.threads, "Parser threads (0: all cores)")
      ->check(CLI::Range(0, 1024));
  analyze->add_flag("--assume-timed-out", options.analyze.assume_timed_out,
                    "Treat every wait as a hang even without timeout evidence (no straggler verdicts)");

  auto* stacks = app.add_subcommand("stacks", "Merge all ranks' stacks into one tree of rank classes (as STAT does)");
  std::vector<std::string> stack_paths;
  std::string stack_format = "text", stack_output;
  stacks
      ->add_option("PATH", stack_paths,
                   "stack dumps (py-spy, gdb, faulthandler), logs with tracebacks, "
                   "Flight Recorder pickles (frames of the last entry), or folders")
      ->required();
  stacks->add_option("--format", stack_format, "Output format")->check(CLI::IsMember({"text", "json"}));
  stacks->add_option("-o,--output", stack_output, "Write to FILE instead of stdout");
  stacks->add_option("--rank", rank_overrides, "FILE=RANK: the rank of a file whose name does not say it");

  auto* simulate = app.add_subcommand("simulate",
                                      "Explore every interleaving of a device-level schedule for a "
                                      "deadlock, and try fixes (docs/simulate.md)");
  std::string schedule, sim_format = "text";
  hangdx::sim::SimulateOptions sim_options;
  bool no_fixes = false;
  simulate->add_option("SCHEDULE", schedule, "schedule file ({\"hangdx_schedule\": 1, ...})")->required();
  simulate->add_option("--format", sim_format, "Output format")->check(CLI::IsMember({"text", "json"}));
  simulate
      ->add_option("--max-states", sim_options.explore.max_states,
                   "Stop after this many distinct states (then: no deadlock found within the bound)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  int64_t max_memory_mib = sim_options.explore.max_memory_bytes >> 20;
  simulate
      ->add_option("--max-memory", max_memory_mib,
                   "Stop when the search would hold more than this many MiB (visited states, stack; default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  simulate->add_flag("--no-fixes", no_fixes, "Do not search for fixes after a deadlock");

  auto* formats = app.add_subcommand("formats", "List the input formats hangdx reads (name and what produces it)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  for (const auto& o : rank_overrides) {
    std::string file;
    int64_t rank = -1;
    if (!ParseRankOverride(o, &file, &rank)) {
      std::cerr << "hangdx: --rank wants FILE=RANK with RANK a whole number from 0 to " << hangdx::model::kMaxRank - 1
                << ", got '" << o << "'\n";
      return 2;
    }
    options.load.rank_of[file] = rank;
  }
  g_doing = app.get_subcommands().empty() ? "hangdx" : app.get_subcommands().front()->get_name();
  for (const auto& p : *analyze ? paths : *stacks ? stack_paths : std::vector<std::string>{schedule})
    if (!p.empty()) g_doing += " " + p;
  if (*formats) return WriteOut(hangdx::pipeline::FormatsText(), "");
  if (*analyze) return RunAnalyze(paths, format, output, options);
  if (*simulate) {
    sim_options.search_fixes = !no_fixes;
    sim_options.explore.max_memory_bytes = max_memory_mib << 20;
    return RunSimulate(schedule, sim_format, sim_options);
  }
  if (*stacks) {
    auto text = hangdx::pipeline::Stacks(stack_paths, options, stack_format);
    if (!text.ok()) {
      std::cerr << "hangdx: " << text.status().message() << "\n";
      return 2;
    }
    return WriteOut(*text, stack_output);
  }
  return 2;
}

}  // namespace

// Out of memory anywhere (the pipeline reports its own stage as a Status;
// this catches the rest: flag parsing, simulate, a renderer's output) is a
// message and exit 2, never an abort.
int main(int argc, char** argv) {
  hangdx::InstallMemoryReserve();  // so that unwinding out of memory has memory to run in
  try {
    return Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "hangdx: out of memory in %s; giving up (exit 2)\n", g_doing.c_str());
  } catch (const std::length_error&) {  // a container asked for more than it can hold
    std::fprintf(stderr, "hangdx: out of memory in %s (a size past the limits); giving up (exit 2)\n", g_doing.c_str());
  }
  return 2;
}
