#include "tools/hangdx/messages_main.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "hangdx/pipeline/pipeline.h"
#include "tools/hangdx/output.h"

namespace hangdx::tools {

int MessagesMain(int argc, char** argv) {
  CLI::App app{
      "The messages hangdx knows from each producer's source (PyTorch c10d, NCCL/RCCL, HCCL, Horovod, DeepSpeed, "
      "Megatron, vLLM, SGLang, Ray, torchtitan, TensorFlow, JAX). Without files: the catalogue. With files: what hangdx recognizes "
      "in each, line by line (why a log was or was not read).",
      "hangdx messages"};
  std::vector<std::string> paths, rank_overrides;
  bool markdown = false;
  std::string output;
  app.add_option("FILE", paths, "Logs or folders to explain");
  app.add_flag("--markdown", markdown, "Write docs/field-messages.md (the catalogue as documentation)");
  app.add_option("-o,--output", output, "Write to FILE instead of stdout");
  app.add_option("--rank", rank_overrides, "FILE=RANK: the rank of a file whose name does not say it");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  pipeline::PipelineOptions options;
  for (const auto& o : rank_overrides) {
    size_t eq = o.rfind('=');
    if (eq == std::string::npos || eq + 1 >= o.size() ||
        o.find_first_not_of("0123456789", eq + 1) != std::string::npos || o.size() - eq > 10) {
      std::cerr << "hangdx: --rank wants FILE=RANK, got '" << o << "'\n";
      return 2;
    }
    options.load.rank_of[o.substr(0, eq)] = std::stoll(o.substr(eq + 1));
  }
  std::string text;
  if (!paths.empty()) {
    auto explained = pipeline::ExplainMessages(paths, options);
    if (!explained.ok()) {
      std::cerr << "hangdx: " << explained.status().message() << "\n";
      return 2;
    }
    text = *explained;
  } else {
    text = markdown ? pipeline::MessagesMarkdown() : pipeline::MessagesTable();
  }
  return WriteOut(text, output);
}

}  // namespace hangdx::tools
