#include "hangdx/ingest/completion.h"

namespace hangdx::ingest {

void DeriveCompletion(model::RankDump* dump) { DeriveCompletionOf(&dump->ops, dump->pg_status); }

}  // namespace hangdx::ingest
