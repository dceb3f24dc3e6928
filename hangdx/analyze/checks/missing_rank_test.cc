#include "hangdx/analyze/checks/missing_rank.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// gloo ranks 0-3 finished seqs 1-4; ranks 0-2 are in seq 5 (`done`: gloo
// ended it, a timeout; else still in flight); rank 3 is idle after seq 4.
model::Job RankThreeAbsent(bool done) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 4);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 5, "all_reduce", done);
  return b.Build();
}

TEST(MissingRankCheck, AnIdleMemberIsTheMissingRank) {
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, RankThreeAbsent(true));
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 5);
  EXPECT_EQ(f.summary,
            "ranks 0-2 wait in all_reduce (pg 0 (default_pg) seq 5) for rank 3, which never arrived and is not "
            "blocked in any recorded collective");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1, 2}));
  EXPECT_EQ(f.roles[1].role, "never arrived");
  // Rank 3's last record (its 4th op, id 3), then the 3 arrived ones.
  ASSERT_EQ(f.evidence.size(), 4u);
  EXPECT_EQ(f.evidence[0].rank, 3);
  EXPECT_EQ(f.evidence[0].record_id, 3);
  EXPECT_EQ(f.evidence[0].note, "last recorded op");
  ASSERT_EQ(f.details.size(), 2u);
  EXPECT_EQ(f.details[0],
            "rank 3: last op pg 0 (default_pg) seq 4 all_reduce (ended: finished or failed); not blocked in any "
            "recorded collective since");
  EXPECT_EQ(f.details[1], "gloo has ended the op (timed out or failed) on the ranks that called it");
}

// testdata/torch/raise3's pickles: rank 3 raised right after seq 4, and its
// handler's dump still shows seq 4 unretired; ranks 0-2 completed seq 4 and
// then timed out in seq 5 (retired, as gloo ends a timed-out op). Seq 4
// finished for all (it needs rank 3's part), so rank 3 is not blocked in it:
// it never arrived at seq 5.
TEST(MissingRankCheck, AnUnretiredRecordThePeersFinishedAndPassedIsNoWait) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 3);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 4, "all_reduce", true).Coll(r, "0", 5, "all_reduce", true);
  b.Coll(3, "0", 4, "all_reduce", false);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].seq, 5);
  EXPECT_TRUE(fs[0].hang);
}

// The same seq 4 pending on rank 3 and completed on ranks 0-2, but no rank
// recorded anything after it: nothing shows that seq 4 finished for all, so
// no member is absent anywhere (no missing rank).
TEST(MissingRankCheck, AnUnretiredRecordNoPeerPassedStaysAWait) {
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Steps(r, "0", 1, 3);
  for (int r = 0; r < 3; ++r) b.Coll(r, "0", 4, "all_reduce", true);
  b.Coll(3, "0", 4, "all_reduce", false);
  EXPECT_TRUE(RunCheck(&MissingRankCheck, b.Build()).empty());
}

// Rank 0's log only: a timeout in seq 11 of pg 3, a pg of `size` members
// (NumelOut / NumelIn of a gather) whose members no record names.
model::Job RankZerosTimeoutInAPgOf(int64_t size, int64_t world) {
  JobBuilder b("nccl");
  b.Coll(0, "3", 11, "gather", false, {16000}, "Float", true).FromLog(0);
  if (world > 0) b.World(world);
  model::Job job = b.Build();
  model::PgConfig& c = job.dumps[0].pg_config["3"];
  c.name = "3";
  c.size = size;  // ranks_known stays false
  return job;
}

TEST(MissingRankCheck, APgAsLargeAsTheWorldHasEveryRankAsAMember) {
  // vllm#16477: rank 0's gather timed out in a pg of 2 in a world of 2; the
  // other member can only be rank 1 (it was "unknown").
  for (int64_t world : {2, -1}) {  // given, or inferred from the pg's size
    std::vector<Finding> fs = RunCheck(&MissingRankCheck, RankZerosTimeoutInAPgOf(2, world));
    ASSERT_EQ(fs.size(), 1u) << world;
    EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
    EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
    EXPECT_EQ(fs[0].summary,
              "rank 0 waits in gather (pg 3 seq 11) for rank 1, of which there is no line in the logs given");
    bool caveat = false;  // said only when the world is inferred
    for (const std::string& d : fs[0].details) caveat = caveat || d.find("whose size is inferred") != d.npos;
    EXPECT_EQ(caveat, world < 0) << world;
  }
  // A pg smaller than the world: its other member is not known.
  EXPECT_TRUE(RunCheck(&MissingRankCheck, RankZerosTimeoutInAPgOf(2, 4)).empty());
}

TEST(MissingRankCheck, NoTimeoutYetIsAStraggler) {
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, RankThreeAbsent(false));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  AnalyzeOptions assume;
  assume.assume_timed_out = true;
  EXPECT_EQ(RunCheck(&MissingRankCheck, RankThreeAbsent(false), assume)[0].kind, Kind::kMissingRank);
}

TEST(MissingRankCheck, AFewMembersWithoutADumpMostLikelyDied) {
  // World 4, rank 2 left no dump: 1 of 4 is at most half.
  JobBuilder b;
  for (int r : {0, 1, 3}) b.Steps(r, "0", 1, 5);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_EQ(fs[0].seq, 5);
  EXPECT_EQ(fs[0].summary,
            "ranks 0-1,3 wait in all_reduce (pg 0 (default_pg) seq 5) for rank 2, which left no dump: it most likely "
            "died (crash, OOM kill, exit)");
}

TEST(MissingRankCheck, RanksADetailMismatchLineComparedAreNotMissing) {
  // SimpleTuner#2712's shape: world 8, only rank 1's DETAIL fingerprint (an
  // all_gather at seq 102) and rank 7's traceback. Rank 1's line "..., but
  // Rank 7 is running collective: ..." puts ranks 0-7 in the check: nobody
  // is missing (reported_mismatch reports it). Without the line, rank 7 is.
  auto job = [](bool with_line) {
    JobBuilder b;
    b.Coll(1, "0", 102, "all_gather", /*done=*/false).FromLog(1);
    b.Stack(7, {"train", "<module>"});
    if (with_line) {
      model::LogEvent e;
      e.kind = model::LogEvent::Kind::kMismatch;
      e.message = "Detected mismatch between collectives on ranks. Rank 1 is running collective: "
                  "CollectiveFingerPrint(SequenceNumber=101, OpType=ALLGATHER, ...), but Rank 7 is running "
                  "collective: CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE).";
      e.pg = "0";
      e.seq = 102;
      e.peer = 7;
      b.Event(1, e);
    }
    return b.World(8).Build();
  };
  EXPECT_TRUE(RunCheck(&MissingRankCheck, job(true)).empty());
  EXPECT_FALSE(RunCheck(&MissingRankCheck, job(false)).empty());
}

TEST(MissingRankCheck, MostMembersWithoutADumpCannotBeDecided) {
  // World 8, only rank 0 has a dump: 7 of 8 missing.
  JobBuilder b;
  b.Steps(0, "0", 1, 5);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, b.World(8).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(fs[0].summary,
            "rank 0 waits in all_reduce (pg 0 (default_pg) seq 5), but there is no dump from ranks 1-7 (7 of 8 "
            "members): cannot tell who is at fault");
}

// Ranks 1-3's logs show them waiting in seq 7 (NCCL); rank 0 left no log.
model::Job LogsOnly(bool combined) {
  JobBuilder b("nccl");
  for (int r = 1; r < 4; ++r) b.Coll(r, "0", 7, "all_reduce", false, {8}, "Float", true).FromLog(r);
  model::Job job = b.World(4).Build();
  if (combined)
    for (auto& d : job.dumps) d.file = "job.log";
  return job;
}

TEST(MissingRankCheck, InPerRankLogsASilentRankHasNoLineRatherThanNeverArrived) {
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, LogsOnly(false));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(fs[0].summary,
            "ranks 1-3 wait in all_reduce (pg 0 (default_pg) seq 7) for rank 0, of which there is no line in the "
            "logs given");
  EXPECT_EQ(fs[0].roles[1].role, "no line in the logs given");
  // One log with every rank's lines: there the silence is rank 0's own.
  std::vector<Finding> cs = RunCheck(&MissingRankCheck, LogsOnly(true));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].summary,
            "ranks 1-3 wait in all_reduce (pg 0 (default_pg) seq 7) for rank 0, which never arrived (its log shows "
            "no wait in it)");
}

TEST(MissingRankCheck, ASilentRankWhoseConnectionTheWaitersLostDied) {
  // LogsOnly, and ranks 1-3 also log "Connection closed by peer": rank 0's
  // process ended, it did not merely print nothing (crashed_rank from logs alone).
  model::Job job = LogsOnly(false);
  model::LogEvent lost;
  lost.kind = model::LogEvent::Kind::kPeerLost;
  lost.message = "Connection closed by peer";
  for (auto& d : job.dumps) d.events.push_back(lost);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
  EXPECT_EQ(fs[0].summary,
            "ranks 1-3 wait in all_reduce (pg 0 (default_pg) seq 7) for rank 0, which stopped logging while they "
            "lost their connection to a peer: it most likely died (crash, OOM kill, exit)");
}

TEST(MissingRankCheck, AnAbsentRankWhoseProcessEndedIsNotToBePySpied) {
  // Rank 3 idle after seq 4, and its log's last word is c10d's "process group
  // has NOT been destroyed" (the destructor at interpreter shutdown): it left
  // the loop early, there is no process to py-spy.
  model::Job job = RankThreeAbsent(true);
  model::LogEvent ended;
  ended.kind = model::LogEvent::Kind::kExit;
  ended.message_id = "torch.c10d.pg_not_destroyed";
  for (auto& d : job.dumps)
    if (d.rank == 3) d.events.push_back(ended);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].fix_hint.rfind("the absent rank's process ended while the others still wait", 0), 0u);
  bool said = false;
  for (const auto& d : fs[0].details)
    said = said || d.find("its log shows its process ending (torch.c10d.pg_not_destroyed)") != std::string::npos;
  EXPECT_TRUE(said);
  // A crash on the same rank is not "ended by itself" (the crash check's case).
  model::LogEvent crash;
  crash.kind = model::LogEvent::Kind::kCrash;
  for (auto& d : job.dumps)
    if (d.rank == 3) d.events.insert(d.events.begin(), crash);
  for (const auto& d : job.dumps)
    if (d.rank == 3) EXPECT_EQ(EndedByItself(d), nullptr);
}

TEST(MissingRankCheck, AnAbsentRankWhoseThreadRaisedIsAliveAndSaysWhereItsMainThreadIs) {
  // testdata/torch/thread_crash: rank 3's loader thread raised (threading's
  // "Exception in thread loader:"); its process lives on, its main thread
  // waits in queue.get for the next batch (its faulthandler stack).
  model::Job job = RankThreeAbsent(true);
  model::LogEvent raised;
  raised.kind = model::LogEvent::Kind::kThreadError;
  raised.thread = "loader";
  raised.message = "ValueError: bad shard";
  raised.file = "rank_3.log";
  raised.line = 7;
  model::StackSample main_thread;
  main_thread.thread = "Thread 0x00007f6ebc7c1b80";
  main_thread.frames = {{"wait", "/usr/lib/python3.11/threading.py", 327},
                        {"get", "/usr/lib/python3.11/queue.py", 171},
                        {"train", "/opt/train/train.py", 40},
                        {"<module>", "/opt/train/train.py", 60}};
  for (auto& d : job.dumps)
    if (d.rank == 3) d.events.push_back(raised), d.stacks.push_back(main_thread);
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_EQ(f.culprit_ranks, Ranks{3});
  EXPECT_EQ(f.summary,
            "ranks 0-2 wait in all_reduce (pg 0 (default_pg) seq 5) for rank 3, which never arrived and is not "
            "blocked in any recorded collective; rank 3's thread loader raised ValueError: bad shard (its process "
            "stayed alive; its main thread is in wait < get < train)");
  EXPECT_EQ(f.fix_hint.rfind("fix the exception that ended the absent rank's thread", 0), 0u);
  ASSERT_GE(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[1].file, "rank_3.log");
  EXPECT_EQ(f.evidence[1].note, "line 7: thread loader: ValueError: bad shard");
  // Without the stack dump the main thread's whereabouts are not claimed.
  for (auto& d : job.dumps) d.stacks.clear();
  fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].summary.find("raised ValueError: bad shard (its process stayed alive)"), std::string::npos)
      << fs[0].summary;
}

TEST(MissingRankCheck, ACrashedOrUnreadableRankIsAnotherChecksCase) {
  model::Job job = RankThreeAbsent(true);
  model::LogEvent crash;
  crash.kind = model::LogEvent::Kind::kCrash;
  crash.message = "CUDA error";
  job.dumps[3].events.push_back(crash);
  EXPECT_TRUE(RunCheck(&MissingRankCheck, job).empty());
}

// The fresh-user tester's c_stacks dumps of ranks 0-1 with only rank 2's
// faulthandler stack (in broadcast): rank 2 took part in seqs 1-2, which
// ranks 0-1 completed; it is absent at seq 3 only, and alive (a stack, no
// crash), not dead. Was missing_rank at seq 1, then seq 2.
TEST(MissingRankCheck, ARankKnownOnlyFromAStackIsAbsentWhereTheOthersStoppedAndAlive) {
  JobBuilder b;
  for (int r : {0, 1}) b.Steps(r, "0", 1, 2).Coll(r, "0", 3, "all_reduce", false);
  b.Stack(2, {"broadcast", "step"});
  AnalyzeOptions timed_out;
  timed_out.assume_timed_out = true;
  model::Job job = b.Members("0", {0, 1, 2}).World(3).Build();
  job.dumps[2].pg_config.clear();  // a stack dump names no pg
  job.dumps[2].pg_status.clear();
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, job, timed_out);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].seq, 3);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  std::string details;
  for (const auto& d : fs[0].details) details += d + "\n";
  EXPECT_NE(details.find("rank 2: no Flight Recorder dump; its stack records no operation"), std::string::npos)
      << details;
}

// The fresh-user tester's send_norecv: rank 0 sends to 1, rank 1 receives
// from 2, rank 2 goes on to all_reduce seq 3. gloo records no P2P op: the
// absent ranks' stacks say where they are.
TEST(MissingRankCheck, AbsentRanksWhoseStacksAreInP2pAreSaidToBeThere) {
  JobBuilder b;
  for (int r : {0, 1, 2}) b.Steps(r, "0", 1, 2);
  b.Coll(2, "0", 3, "all_reduce", false);
  b.Stack(0, {"send", "step"}).Stack(1, {"recv", "step"});
  AnalyzeOptions timed_out;
  timed_out.assume_timed_out = true;
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, b.Members("0", {0, 1, 2}).Build(), timed_out);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].summary,
            "rank 2 waits in all_reduce (pg 0 (default_pg) seq 3) for ranks 0-1, which never arrived: their stacks "
            "show them in point-to-point calls (rank 0 in send, rank 1 in recv), which gloo's Flight Recorder does "
            "not record");
}

TEST(MissingRankCheck, ARankWhoseDumpRecordsNothingIsNotShownDeadNorAbsent) {
  // bcast_unpickle_empty's dumps alone: ranks 1,2 record broadcast seq 1, 2
  // (failed ops, retired); rank 0's Flight Recorder was off (no entry, no
  // pg). It wrote a dump, so it was alive; it says nothing of seq 2.
  JobBuilder b;
  for (int r : {1, 2}) {
    b.Coll(r, "0", 1, "broadcast");
    b.Coll(r, "0", 2, "broadcast", false, {118}, "Byte", true);
  }
  b.Rank(0);
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  job.dumps[0].pg_config.clear();
  job.dumps[0].pg_status.clear();
  std::vector<Finding> fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, Ranks{0});
  EXPECT_EQ(fs[0].seq, 2);
  EXPECT_EQ(fs[0].summary,
            "ranks 1-2 wait in broadcast (pg 0 (default_pg) seq 2) for rank 0, whose dump records nothing (no op, no "
            "process group: its Flight Recorder was off, or the file is empty): nothing shows that it died or did "
            "not arrive");

  // The same rank with no dump at all: no file shows it was alive.
  job.dumps.erase(job.dumps.begin());
  fs = RunCheck(&MissingRankCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{0});
}

}  // namespace
}  // namespace hangdx::analyze
