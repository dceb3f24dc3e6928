// hangdx/live/redis_store.h
// RedisStore: the StateStore in a Redis server (--redis redis://HOST:PORT[/DB]),
// through hiredis (Debian libhiredis-dev). Keys, all under
// "hangdx:<job>:":
//
//   ranks          HASH   rank -> RankRecord::Encode()   (agents HSET their node's ranks)
//   history        LIST   probe-history JSON lines, trimmed to history_max
//   reports:<rank> LIST   pushed reports, trimmed to reports_per_rank
//   report_ranks   SET    ranks that have reports
//   findings       HASH   fingerprint -> finding record
//   findings_order LIST   finding records in the order found
//   stalls         SET    stall episodes already analysed
//
// A finding is added atomically (one Lua script: HSETNX, then RPUSH only
// when new), so a watch killed between the two leaves no half-recorded
// finding. Each call is one round trip (PutRanks batches 1,000 ranks per
// HSET); a pushed report and its rank's record are one pipelined write,
// and the writes of reports stored at the same time from several threads
// share one round trip (group commit), each call returning once Redis
// holds its own. A lost connection is reopened once per call.
#pragma once

#include <memory>
#include <string>

#include "hangdx/base/status.h"
#include "hangdx/live/state_store.h"

namespace hangdx::live {

// Connects to `url` ("redis://host:port[/db]"). Errors: kInvalidArgument
// for another URL, kIo when the server cannot be reached or answers
// PING wrongly.
StatusOr<std::unique_ptr<StateStore>> NewRedisStore(const std::string& url, const StoreOptions& options);

}  // namespace hangdx::live
