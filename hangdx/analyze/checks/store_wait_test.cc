// The store-wait check: a gloo pg's creation that timed out waiting for a
// peer's address names that peer, not the ranks that waited.
#include "hangdx/analyze/checks/store_wait.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::LogEvent;
using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// What the catalogue row torch.gloo.connect_wait_timeout gives for
// "wait timeout after 5000ms, keys: /default_pg/0//cpu//0/<peer>".
LogEvent ConnectWait(const std::string& pg, model::Rank peer, bool pg_local = false) {
  LogEvent e;
  e.kind = LogEvent::Kind::kTimeout;
  e.message_id = "torch.gloo.connect_wait_timeout";
  e.message = "torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/" +
              std::to_string(peer);
  e.pg = pg;
  e.peer = peer;
  e.ranks_pg_local = pg_local;
  e.timeout_ms = 5000;
  return e;
}

TEST(StoreWaitCheck, TheRankWhoseKeyWasNeverSetIsTheCulprit) {
  // testdata/torch/store_wait_init: 3 ranks, rank 2 sleeps before
  // init_process_group; ranks 0 and 1 time out waiting for key .../2.
  JobBuilder b;
  b.Event(0, ConnectWait("0", 2)).FromLog(0).Event(1, ConnectWait("0", 2)).FromLog(1);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_FALSE(f.ranks_are_pg_local);
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.op, "init_process_group");
  EXPECT_EQ(f.summary,
            "ranks 0-1 timed out creating the default pg (init_process_group): they waited in the store for the "
            "gloo address of rank 2, which was never set: it never reached init_process_group (started late, hung "
            "or died before it)");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1}));
  EXPECT_EQ(f.roles[1].ranks, Ranks{2});
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[1].rank, 1);
}

TEST(StoreWaitCheck, ANewGroupsPeerCountsInsideThePg) {
  // vllm-ascend#2248: "keys: /default_pg/0//54//cpu//0/2": pg rank 2 of pg
  // 54, whose global rank no file gives.
  JobBuilder b;
  b.Event(0, ConnectWait("54", 2, /*pg_local=*/true)).FromLog(0);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_TRUE(fs[0].ranks_are_pg_local);
  EXPECT_EQ(fs[0].op, "new_group");
  EXPECT_NE(fs[0].summary.find("rank 2 of pg 54 (ranks inside the pg; which global rank it is no file says)"),
            std::string::npos)
      << fs[0].summary;
}

TEST(StoreWaitCheck, AWaiterIsNotACulpritAndOtherTimeoutsAreNotRead) {
  // Ranks 0 and 1 each waited for the other's key (both slow, both there):
  // nobody missing. A plain store wait timeout (no key this row reads)
  // names nobody either.
  JobBuilder b;
  LogEvent plain = ConnectWait("0", 3);
  plain.message_id = "torch.store.wait_timeout";
  b.Event(0, ConnectWait("0", 1)).FromLog(0).Event(1, ConnectWait("0", 0)).FromLog(1).Event(1, plain);
  EXPECT_TRUE(RunCheck(&StoreWaitCheck, b.Build()).empty());
}

// What the catalogue row torch.store.waiting_for_clients gives for the store
// host's "Timed out after 6 seconds waiting for clients. <joined>/<world>
// clients joined.".
LogEvent HostWait(int64_t joined, int64_t world) {
  LogEvent e;
  e.kind = LogEvent::Kind::kTimeout;
  e.message_id = "torch.store.waiting_for_clients";
  e.message = "torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. " +
              std::to_string(joined) + "/" + std::to_string(world) + " clients joined.";
  e.timeout_ms = 6000;
  return e;
}

TEST(StoreWaitCheck, TheStoreHostWaitingForClientsIsNotTheCulprit) {
  // testdata/torch/store_host_waits: no torchrun, rank 0 hosts the store;
  // rank 2 sleeps. Rank 1 waits for key .../0 (rank 0's address), rank 0
  // waits for clients, 2/3 joined: the one missing is rank 2, the only
  // rank of 0..2 that is neither the host nor a waiter.
  JobBuilder b;
  b.Event(0, HostWait(2, 3)).FromLog(0).Event(1, ConnectWait("0", 0)).FromLog(1);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.op, "init_process_group");
  ASSERT_EQ(f.roles.size(), 3u);
  EXPECT_EQ(f.roles[0].ranks, Ranks{0});
  EXPECT_EQ(f.roles[1].ranks, Ranks{1});
  EXPECT_EQ(f.roles[2].role, "never joined the store");
  EXPECT_NE(f.summary.find("only 2 of 3 ranks joined"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find(": rank 2 never joined"), std::string::npos) << f.summary;
}

TEST(StoreWaitCheck, TwoMissingOfFourAreBothNamed) {
  // World 4, ranks 2 and 3 late: "2/4 clients joined", rank 1 waits for
  // rank 0's key; 4 - 2 = 2 missing, and exactly ranks 2 and 3 left no sign.
  JobBuilder b;
  b.Event(0, HostWait(2, 4)).FromLog(0).Event(1, ConnectWait("0", 0)).FromLog(1);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{2, 3}));
  EXPECT_EQ(fs[0].roles.back().role, "never joined the store");
}

TEST(StoreWaitCheck, WhenTheLogsCannotTellWhichClientIsMissingTheCandidatesAreNamed) {
  // Only the host's file: "3/4 clients joined", one rank of 1..3 is
  // missing and nothing says which: all three are candidates, and the
  // summary says the logs cannot tell.
  JobBuilder b;
  b.Event(0, HostWait(3, 4)).FromLog(0);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, (Ranks{1, 2, 3}));
  EXPECT_EQ(fs[0].roles.back().role, "may not have joined the store (candidates)");
  EXPECT_NE(fs[0].summary.find("which 1 of them never joined the logs cannot tell"), std::string::npos)
      << fs[0].summary;
}

// What the catalogue row torch.socket.client_timed_out gives for a store
// client that could not reach the server.
LogEvent ConnectTimedOut() {
  LogEvent e;
  e.kind = LogEvent::Kind::kPeerLost;
  e.message_id = "torch.socket.client_timed_out";
  e.message = "The client socket has timed out after 6000ms while trying to connect to (127.0.0.1, 29632).";
  e.timeout_ms = 6000;
  return e;
}

TEST(StoreWaitCheck, ClientsThatNeverReachedTheStoreNameRank0TheHost) {
  // testdata/torch/store_host_waits_late_host: env:// init, rank 0 (the
  // store host) sleeps 30 s; ranks 1 and 2 time out connecting. Was
  // crashed_rank [0] ("lost their connection ... it most likely died"):
  // no connection ever existed.
  JobBuilder b;
  b.Event(1, ConnectTimedOut()).FromLog(1).Event(1, ConnectTimedOut()).Event(2, ConnectTimedOut()).FromLog(2);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.World(3).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(fs[0].roles[0].ranks, (Ranks{1, 2}));
  ASSERT_EQ(fs[0].evidence.size(), 2u);  // each client's first line
  EXPECT_EQ(fs[0].evidence[1].rank, 2);
  EXPECT_EQ(fs[0].summary.rfind("ranks 1-2 could not connect to the TCPStore server", 0), 0u) << fs[0].summary;
}

TEST(StoreWaitCheck, AClientThatRetriedAndWentOnDidNotGiveUp) {
  // Clients started before the host: "- retrying (try=0 ...)", then the
  // connect succeeds and the rank records its collectives. No finding.
  LogEvent retry = ConnectTimedOut();
  retry.message_id = "torch.socket.client_connect_retrying";
  JobBuilder b;
  b.Event(1, ConnectTimedOut()).Event(1, retry).Event(2, ConnectTimedOut()).Steps(2, "0", 1, 3);
  EXPECT_TRUE(RunCheck(&StoreWaitCheck, b.World(3).Build()).empty());
}

TEST(StoreWaitCheck, WhenRank0FailedToConnectTooTheHostIsNoRank) {
  // torchrun's agent hosts the store: every rank, rank 0 too, is a client.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Event(r, ConnectTimedOut()).FromLog(r);
  std::vector<Finding> fs = RunCheck(&StoreWaitCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_TRUE(fs[0].candidates.empty());
  EXPECT_NE(fs[0].summary.find("rank 0 failed too"), std::string::npos) << fs[0].summary;
}

}  // namespace
}  // namespace hangdx::analyze
