// Fuzzes one text parser directly, without the content sniffing that
// ParseTextArtifact does first, so each parser sees every input. Built once
// per parser with HANGDX_FUZZ_PARSER set (see fuzz/CMakeLists.txt):
// 0 NCCL log, 1 c10d / PyTorch log, 2 stack dump, 3 HCCL plog, 4 NCCL RAS.
#include <cstdint>
#include <string>
#include <vector>

#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"
#include "hangdx/ingest/formats/nccl_log/nccl_log.h"
#include "hangdx/ingest/formats/nccl_ras/nccl_ras.h"
#include "hangdx/ingest/formats/stack_dump/stack_dump.h"
#include "hangdx/ingest/formats/torch_log/torch_log.h"
#include "hangdx/ingest/logs/line_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<hangdx::model::Diagnostic> diags;
  hangdx::ingest::logs::DumpSet set("fuzz", &diags);
  const int64_t rank_hint = size % 3 == 0 ? -1 : 5;
  namespace logs = hangdx::ingest::logs;
#if HANGDX_FUZZ_PARSER == 0
  logs::ParseNcclLog(text, rank_hint, &set);
#elif HANGDX_FUZZ_PARSER == 1
  logs::ParseTorchLog(text, rank_hint, &set);
#elif HANGDX_FUZZ_PARSER == 2
  for (auto f : {logs::SniffStackFormat(text), logs::StackFormat::kPySpy})
    if (f != logs::StackFormat::kNone) logs::ParseStackDump(text, f, rank_hint, &set);
#elif HANGDX_FUZZ_PARSER == 3
  logs::ParseHcclPlog(text, rank_hint, &set);
#else
  logs::ParseNcclRas(text, &set);
#endif
  set.Take();
  return 0;
}
