#include "hangdx/ingest/completion.h"

#include <set>
#include <string_view>

namespace hangdx::ingest {

void DeriveCompletion(model::RankDump* dump) {
  for (auto& op : dump->ops) {
    op.completed = op.state == model::OpState::kCompleted;
    // gloo's recorder never moves `state` past "scheduled"; the watchdog
    // retires a work item when it ends (successfully or not), and pg_status
    // can lag behind that. Measured on torch 2.13 (see testdata/torch).
    if (op.backend == "gloo") {
      // ...and its pg_status counts op_id (which P2P ops advance too), not
      // collective_seq_id: not comparable with an entry's seq.
      op.completed = op.completed || op.retired;
      continue;
    }
    if (!op.completed && !op.is_p2p && op.collective_seq >= 0) {
      auto it = dump->pg_status.find(op.pg_id);
      if (it != dump->pg_status.end() && op.collective_seq <= it->second.last_completed) op.completed = true;
    }
  }
  // NCCL runs a pg's ops in order on one stream: once a later op of the pg
  // completed, every earlier one did. This also settles batched P2P entries
  // (batch_isend_irecv), which stay "scheduled" forever because only the
  // group's closing entry gets an end event (pytorch/pytorch#137969).
  std::set<std::string_view> later_done;
  for (auto it = dump->ops.rbegin(); it != dump->ops.rend(); ++it) {
    if (it->backend == "gloo") continue;
    if (it->completed)
      later_done.insert(it->pg_name);
    else if (later_done.count(it->pg_name))
      it->completed = true;
  }
}

}  // namespace hangdx::ingest
