// The lost-peer check: from logs alone, the rank that stopped logging
// while the others lose their connection to it is a crashed_rank.
#include "hangdx/analyze/checks/lost_peer.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::LogEvent;
using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// A gloo-style "Connection closed by peer" line of rank r, naming global
// rank `peer` (-1: the line names an address only).
LogEvent Lost(model::Rank peer) {
  LogEvent e;
  e.kind = LogEvent::Kind::kPeerLost;
  e.message =
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[10.0.0.3]:51234";
  e.peer = peer;
  return e;
}

// Checks that `fs` is one undecided finding between `candidates`, naming
// no culprit, with `summary`.
void ExpectUndecided(const std::vector<Finding>& fs, const Ranks& candidates, const std::string& summary) {
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, candidates);
  EXPECT_EQ(fs[0].summary, summary);
  EXPECT_NE(fs[0].would_decide, "");
}

// Checks that `fs` is one crashed_rank finding naming `culprit` in the
// role `role`, with `summary`.
void ExpectCulprit(const std::vector<Finding>& fs, model::Rank culprit, const std::string& role,
                   const std::string& summary) {
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{culprit});
  ASSERT_EQ(fs[0].roles.size(), 2u);
  EXPECT_EQ(fs[0].roles[1].role, role);
  EXPECT_EQ(fs[0].summary, summary);
}

TEST(LostPeerCheck, TheOnlyOtherRankIsTheOneThatDied) {
  // 4 ranks; ranks 0-2 log that they lost a peer, no file of rank 3 was
  // given: the peer is one of the other ranks, and rank 3 is the only one.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Event(r, Lost(-1)).FromLog(r);
  std::vector<Finding> fs = RunCheck(&LostPeerCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCrashedRank);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.summary,
            "ranks 0-2 lost their connection to a peer while rank 3, whose file was not given, is the only other rank "
            "and went away: it most likely died (crash, kill, exit)");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2}));
  EXPECT_EQ(f.roles[1].role, "the only other rank");
  ASSERT_EQ(f.evidence.size(), 3u);
  EXPECT_EQ(f.evidence[0].rank, 0);
  EXPECT_EQ(f.evidence[0].file, "rank0.log");
}

TEST(LostPeerCheck, ThePeerTheMessagesNameIsTheCulprit) {
  // pytorch#75512 shape: only the receiver's log; it names the sender.
  JobBuilder b;
  b.Event(1, Lost(0)).Event(1, Lost(0)).FromLog(1);
  std::vector<Finding> fs = RunCheck(&LostPeerCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(fs[0].roles[1].role, "the peer they lost");
  EXPECT_EQ(fs[0].summary,
            "rank 1 lost its connection to a peer while rank 0 went away: it most likely died (crash, kill, exit)");
  EXPECT_EQ(fs[0].evidence.size(), 2u);
}

TEST(LostPeerCheck, APeerThatAlsoReportsTheLossIsAVictim) {
  // Ranks 0 and 1 each name the other: both are alive enough to log; with
  // the world unknown there is no silent rank to blame.
  JobBuilder b;
  b.Event(0, Lost(1)).FromLog(0).Event(1, Lost(0)).FromLog(1);
  EXPECT_TRUE(RunCheck(&LostPeerCheck, b.Build()).empty());
}

TEST(LostPeerCheck, RanksThatLeftALogWithoutAnErrorAreCandidatesNotCulprits) {
  // testdata/torch/i's stderr: rank 2 lost a peer at an address; ranks 0 and
  // 1 left logs hangdx reads nothing in (they may have exited normally).
  JobBuilder b;
  LogEvent lost = Lost(-1);
  lost.peer_addr = "[127.0.0.1]:6062";
  b.Event(2, lost).FromLog(2);
  model::Job job = b.World(3).Build();
  for (model::Rank r : {0, 1}) {
    model::FileRead read;
    read.file = "rank_" + std::to_string(r) + ".log";
    read.rank = r;
    read.bytes = 300;
    job.file_reads.push_back(read);
  }
  std::vector<Finding> fs = RunCheck(&LostPeerCheck, job);
  ExpectUndecided(fs, {0, 1},
                  "rank 2 lost its connection to a peer ([127.0.0.1]:6062), and the evidence cannot decide which rank "
                  "it was: ranks 0-1 left a log without an error (they may have exited, been killed or still run)");
  // An empty file is no log: rank 1 is then the one that left none.
  job.file_reads[1].bytes = 0;
  fs = RunCheck(&LostPeerCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
  EXPECT_EQ(fs[0].roles[1].role, "no log");
}

TEST(LostPeerCheck, TheOneRankWhoseLogStopsWithoutAnErrorIsTheCulprit) {
  // testdata/torch/f1's stderr: rank 1 sys.exit()s mid-training, its log
  // holds nothing hangdx reads; ranks 0, 2, 3 lose their peer.
  JobBuilder b;
  for (int r : {0, 2, 3}) b.Event(r, Lost(-1)).FromLog(r);
  model::Job job = b.World(4).Build();
  model::FileRead read;
  read.file = "rank_1.log";
  read.rank = 1;
  read.bytes = 200;
  job.file_reads.push_back(read);
  ExpectCulprit(RunCheck(&LostPeerCheck, job), 1, "stopped logging",
                "ranks 0,2-3 lost their connection to a peer while rank 1 stopped logging without an error: it most "
                "likely died (crash, kill, exit)");
}

TEST(LostPeerCheck, APeerNoFileShowsIsUndecidedNotAHealthyJob) {
  // testdata/torch/h3/stderr: ranks 0 and 1 lose a peer at an address, the
  // third rank's log holds nothing hangdx reads and the world is unknown.
  JobBuilder b;
  LogEvent lost = Lost(-1);
  lost.peer_addr = "[127.0.0.1]:214";
  b.Event(0, lost).FromLog(0).Event(1, lost).FromLog(1);
  std::vector<Finding> fs = RunCheck(&LostPeerCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].summary,
            "ranks 0-1 lost their connection to a peer ([127.0.0.1]:214), and no file given says which rank it was "
            "(world size unknown: pass --world-size)");
  EXPECT_EQ(fs[0].evidence.size(), 2u);
  // A known world of two, both seen: the peer is one of them (nothing new
  // to say); a rank that timed out: the peer closed after its own timeout.
  EXPECT_TRUE(RunCheck(&LostPeerCheck, b.World(2).Build()).empty());
  JobBuilder t;
  t.Event(0, LogEvent::Kind::kTimeout, "Timed out waiting 4000ms for send operation to complete").FromLog(0);
  t.Event(1, lost).FromLog(1);
  EXPECT_TRUE(RunCheck(&LostPeerCheck, t.Build()).empty());
}

TEST(LostPeerCheck, ALoggedCrashIsTheCrashedRankChecksCase) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Event(r, Lost(-1)).FromLog(r);
  b.Event(3, LogEvent::Kind::kCrash, "CUDA out of memory").FromLog(3);
  EXPECT_TRUE(RunCheck(&LostPeerCheck, b.World(4).Build()).empty());
  EXPECT_TRUE(ReportsLostPeer(b.Build(), {0}));
  EXPECT_FALSE(ReportsLostPeer(b.Build(), {3}));
}

TEST(LostPeerCheck, RanksWhoseFilesWereNotGivenAreCandidatesNotDead) {
  // testdata/torch/lost_peer_partial: 2 of 4 ranks' logs given, both lost a
  // peer at an address; of ranks 2 and 3 nothing is known (rank 3 died,
  // rank 2 lived): undecided between them, no culprit.
  JobBuilder b;
  LogEvent lost = Lost(-1);
  lost.peer_addr = "[127.0.0.1]:30401";
  for (int r = 0; r < 2; ++r) b.Event(r, lost).FromLog(r);
  std::vector<Finding> fs = RunCheck(&LostPeerCheck, b.World(4).Build());
  ExpectUndecided(fs, {2, 3},
                  "ranks 0-1 lost their connection to a peer ([127.0.0.1]:30401), and the evidence cannot decide "
                  "which rank it was: ranks 2-3 gave no file (theirs were not handed to hangdx: not proven dead)");
  ASSERT_EQ(fs[0].roles.size(), 2u);
  EXPECT_EQ(fs[0].roles[1].role, "file not given");
  EXPECT_EQ(fs[0].roles[1].ranks, (Ranks{2, 3}));
}

TEST(LostPeerCheck, ARankThatExitedZeroWhileTheOthersNeededItIsTheCulprit) {
  // testdata/torch/torchrun_exit0: torchrun's summary omits rank 3 (exited
  // 0); ranks 0-2 lost their peer.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Event(r, Lost(-1)).FromLog(r);
  LogEvent ended;
  ended.kind = LogEvent::Kind::kExit;
  ended.exit_role = LogEvent::ExitRole::kEndedInOrder;
  b.Event(3, ended).FromLog(3);
  ExpectCulprit(RunCheck(&LostPeerCheck, b.World(4).Build()), 3, "exited 0",
                "ranks 0-2 lost their connection to a peer while rank 3 exited 0 (its launcher's failure summary) "
                "before its peers were done: it ended while still needed");
}

}  // namespace
}  // namespace hangdx::analyze
