#include "hangdx/ingest/text_logs.h"

#include "hangdx/ingest/formats/hccl_plog/hccl_plog.h"
#include "hangdx/ingest/formats/nccl_log/nccl_log.h"
#include "hangdx/ingest/formats/nccl_ras/nccl_ras.h"
#include "hangdx/ingest/formats/stack_dump/stack_dump.h"
#include "hangdx/ingest/formats/torch_log/torch_log.h"
#include "hangdx/ingest/logs/line_util.h"

namespace hangdx::ingest {

// Every parser whose anchors the content holds reads the file (a rank's
// stderr often mixes NCCL lines, c10d messages and a traceback); their
// findings for one rank land in one RankDump.
bool ParseTextArtifact(std::string_view data, const std::string& file, int64_t rank_hint,
                       std::vector<model::RankDump>* out, std::vector<model::Diagnostic>* diags) {
  if (data.empty()) return false;
  if (logs::LooksBinary(data)) return false;
  logs::DumpSet set(file, diags);
  bool any = false;
  if (logs::LooksLikeNcclRas(data)) {
    logs::ParseNcclRas(data, &set);
    any = true;
  }
  if (logs::LooksLikeNcclLog(data)) {
    logs::ParseNcclLog(data, rank_hint, &set);
    any = true;
  }
  if (logs::LooksLikeTorchLog(data)) {
    logs::ParseTorchLog(data, rank_hint, &set);
    any = true;
  }
  if (logs::LooksLikeHcclPlog(data)) {
    logs::ParseHcclPlog(data, rank_hint, &set);
    any = true;
  }
  logs::StackFormat sf = logs::SniffStackFormat(data);
  if (sf != logs::StackFormat::kNone) {
    logs::ParseStackDump(data, sf, rank_hint, &set);
    any = true;
  }
  if (!any) return false;
  if (set.size() == 0)
    set.Diag(model::Diagnostic::Severity::kInfo, -1, rank_hint,
             "a text log hangdx reads, but nothing in it names an operation, a stack or an error of a known rank");
  set.MoveTo(out);
  return true;
}

}  // namespace hangdx::ingest
