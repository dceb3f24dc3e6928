#include "hangdx/analyze/world.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

TEST(ResolveWorld, GivenSizeNamesTheRanksWithoutADump) {
  // --world-size 4, dumps of ranks 0, 1 and 3: rank 2 left none.
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Steps(1, "0", 1, 1).Steps(3, "0", 1, 1).World(4).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.reported_size, 4);
  EXPECT_FALSE(w.inferred);
  EXPECT_EQ(w.without_dump, Ranks{2});
  EXPECT_TRUE(diags.empty());
}

TEST(ResolveWorld, AGivenSizeTheRanksExceedIsOverruledAloud) {
  // --world-size 2 and dumps of ranks 0-2 (the tester's contradiction): the
  // ranks win, and a warning says so (before: world 3 in silence).
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Steps(1, "0", 1, 1).Steps(2, "0", 1, 1).World(2).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 3);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.Take()[0].message,
            "the world size 2 (from --world-size) is less than the ranks seen (rank 2): the world is taken as 3 ranks");
}

TEST(ResolveWorld, RanksOfADeviceScheduleAreNotWithoutData) {
  // A schedule of ranks 0 and 1 plus a dump of rank 3 (tester's `misnamed`):
  // world 4 inferred, only rank 2 left nothing (before: "without: 0-2").
  model::Job job = JobBuilder().Steps(3, "0", 1, 1).Build();
  job.device.emplace_back();
  job.device[0].ranks.resize(2);
  job.device[0].ranks[0].rank = 0;
  job.device[0].ranks[1].rank = 1;
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.without_dump, Ranks{2});
}

TEST(ResolveWorld, DefaultPgConfigGivesTheSize) {
  // Two dumps, but pg 0's config lists ranks 0-5: ranks 2-5 left none.
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Steps(1, "0", 1, 1).Members("0", {0, 1, 2, 3, 4, 5}).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 6);
  EXPECT_FALSE(w.inferred);
  EXPECT_EQ(w.without_dump, (Ranks{2, 3, 4, 5}));
}

TEST(ResolveWorld, AGivenSizePastTheRecordedOneIsKeptWithAWarning) {
  // The dumps' default pg lists ranks 0-2; --world-size 5: ranks 3-4 are
  // ranks without data, and the user is told the dumps say 3.
  model::Job job =
      JobBuilder().Steps(0, "0", 1, 1).Steps(1, "0", 1, 1).Steps(2, "0", 1, 1).Members("0", {0, 1, 2}).World(5).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 5);
  EXPECT_FALSE(w.inferred);
  EXPECT_EQ(w.without_dump, (Ranks{3, 4}));
  std::vector<model::Diagnostic> d = diags.Take();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message,
            "--world-size 5 but the dumps' default pg lists 3 ranks (0-2): ranks 3-4 are taken as ranks without data; "
            "drop --world-size if the job had 3 ranks");
  // The same size as recorded: no word.
  model::Job same = JobBuilder().Steps(0, "0", 1, 1).Members("0", {0, 1, 2}).World(3).Build();
  ResolveWorld(same, &diags);
  EXPECT_TRUE(diags.Take().empty());
}

TEST(ResolveWorld, HighestRankSeenIsAnInferredSize) {
  // Rank 0 waits for rank 2; nothing says more: 3 ranks, inferred.
  model::Job job = JobBuilder().Wait(0, "all_reduce", {2}).Wait(1, "all_reduce", {2}).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 3);
  EXPECT_TRUE(w.inferred);
  EXPECT_EQ(w.without_dump, Ranks{2});
}

TEST(ResolveWorld, APgOfNMembersNeedsAWorldOfN) {
  // One rank's NCCL log of a communicator of 4 ranks (its size, not its
  // members): ranks 1-3 have no data (tester F11).
  model::Job job = JobBuilder("nccl").Coll(0, "c", 0, "broadcast", false).Build();
  job.dumps[0].pg_config["c"].size = 4;
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 4);
  EXPECT_TRUE(w.inferred);
  EXPECT_EQ(w.without_dump, (Ranks{1, 2, 3}));
}

TEST(ResolveWorld, GlobalRanksAMessageNamesAreRanksOfTheJob) {
  // Horovod's coordinator (rank 0, the only log) reports tensors that rank 3
  // submitted: a world of 4, ranks 1-3 without data. Ranks inside a pg do
  // not count.
  model::LogEvent stall;
  stall.kind = model::LogEvent::Kind::kStall;
  stall.ready_ranks = {3};
  model::LogEvent local;
  local.kind = model::LogEvent::Kind::kCulprit;
  local.ranks = {40};
  local.ranks_pg_local = true;
  model::Job job = JobBuilder().Event(0, stall).Event(0, local).FromLog(0).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.without_dump, (Ranks{1, 2, 3}));
}

TEST(ResolveWorld, UnbelievableRankNumbersAreNotAWorld) {
  // One rank with data waits for rank 1000: 1000 > 4 * 1 + 64, so the size
  // is left unknown (reported as the 1 dump) with a warning.
  model::Job job = JobBuilder().Wait(0, "all_reduce", {1000}).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, -1);
  EXPECT_EQ(w.reported_size, 1);
  EXPECT_TRUE(w.without_dump.empty());
  std::vector<model::Diagnostic> d = diags.Take();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message,
            "rank numbers go up to 1000 but only 1 rank has data; not guessing the world size (pass --world-size)");
}

TEST(ResolveWorld, AGivenWorldFarPastTheDataIsNotListedRankByRank) {
  // --world-size 2^24 with a dump of rank 2: the 2^24 - 1 ranks without
  // data would cost gigabytes of summaries, so the world is taken as the
  // ranks with data (0-2, rank 0 and 1 without a dump), with a warning; a
  // given size up to kMaxListedWorld is still believed.
  model::Job job = JobBuilder().Steps(2, "0", 1, 1).World(int64_t{1} << 24).Build();
  model::DiagnosticSink diags;
  World w = ResolveWorld(job, &diags);
  EXPECT_EQ(w.size, 3);
  EXPECT_EQ(w.reported_size, 3);
  EXPECT_TRUE(w.inferred);
  EXPECT_EQ(w.without_dump, (Ranks{0, 1}));
  std::vector<model::Diagnostic> d = diags.Take();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("a world of 16777216 ranks (from --world-size) but only 1 rank has data"),
            std::string::npos)
      << d[0].message;
  model::Job fits = JobBuilder().Steps(0, "0", 1, 1).World(kMaxListedWorld).Build();
  World f = ResolveWorld(fits, &diags);
  EXPECT_EQ(f.size, kMaxListedWorld);
  EXPECT_EQ(f.without_dump.size(), static_cast<size_t>(kMaxListedWorld - 1));
  // A 100,000-rank job with one dump: 99,999 ranks without one, 1 to 99,999.
  model::Job big = JobBuilder().Steps(0, "0", 1, 1).World(100000).Build();
  World b = ResolveWorld(big, &diags);
  EXPECT_EQ(b.size, 100000);
  EXPECT_FALSE(b.inferred);
  ASSERT_EQ(b.without_dump.size(), 99999u);
  EXPECT_EQ(b.without_dump.front(), 1);
  EXPECT_EQ(b.without_dump.back(), 99999);
  EXPECT_TRUE(diags.Take().empty());
}

TEST(Crashed, OnlyACrashEventMakesARankDead) {
  model::Job job = JobBuilder()
                       .Event(0, model::LogEvent::Kind::kCrash, "CUDA error")
                       .Event(1, model::LogEvent::Kind::kTimeout, "Watchdog caught collective operation timeout")
                       .Build();
  EXPECT_TRUE(Crashed(job, 0));
  EXPECT_FALSE(Crashed(job, 1));
  EXPECT_FALSE(Crashed(job, 7));  // no dump at all
}

TEST(Crashed, AKillBySigkillIsADeathUnlessTheRanksOwnTimeoutBroughtItOn) {
  // colossalai#3514: torchelastic reports local rank 3 "failed (exitcode: -9)".
  model::testing::JobBuilder b;
  b.Event(3, model::LogEvent::Kind::kExit, "[default0]: failed (exitcode: -9) local_rank: 3 (pid: 812917)").FromLog(3);
  b.Event(1, model::LogEvent::Kind::kExit, "failed (exitcode: 1) local_rank: 1").FromLog(1);
  b.Event(2, model::LogEvent::Kind::kTimeout, "Watchdog caught collective operation timeout").FromLog(2);
  b.Event(2, model::LogEvent::Kind::kExit, "failed (exitcode: -9) local_rank: 2").FromLog(2);
  model::LogEvent sig;
  sig.kind = model::LogEvent::Kind::kExit;
  sig.signal = 9;
  b.Event(4, sig).FromLog(4);
  model::Job job = b.Build();
  EXPECT_TRUE(Crashed(job, 3));
  EXPECT_FALSE(Crashed(job, 1));  // an exit code is no kill: whose consequence it is, the log does not say
  EXPECT_FALSE(Crashed(job, 2));  // killed after its own timeout: the teardown
  EXPECT_TRUE(Crashed(job, 4));
}

TEST(Crashed, ARayWorkerThatExitedBySystemErrorIsDead) {
  // verl#4921: Ray's ActorDiedError for WorkerDict_0:3 says "Worker exit type: SYSTEM_ERROR"
  // (the process vanished); an INTENDED_USER_EXIT is the worker's own choice.
  model::testing::JobBuilder b;
  model::LogEvent died;
  died.kind = model::LogEvent::Kind::kExit;
  died.error = "SYSTEM_ERROR";
  b.Event(3, died).FromLog(3);
  model::LogEvent asked = died;
  asked.error = "INTENDED_USER_EXIT";
  b.Event(1, asked).FromLog(1);
  model::Job job = b.Build();
  EXPECT_TRUE(Crashed(job, 3));
  EXPECT_FALSE(Crashed(job, 1));
  EXPECT_TRUE(DiedUnexpectedly(died));
  EXPECT_FALSE(DiedUnexpectedly(asked));
}

// An exit event of `code` (negative: killed by signal -code, as launchers print it).
model::LogEvent ExitOf(int64_t code, model::LogEvent::ExitRole role = model::LogEvent::ExitRole::kNone) {
  model::LogEvent e;
  e.kind = model::LogEvent::Kind::kExit;
  e.exit_code = code;
  e.exit_role = role;
  return e;
}

TEST(Crashed, FaultSignalsInALaunchersExitRecordAreCrashes) {
  // torchrun's "exitcode  : -11 (pid: 5851)  (SIGSEGV)": the fault signals
  // are SIGILL 4, SIGBUS 7, SIGFPE 8, SIGKILL 9, SIGSEGV 11; SIGTERM 15,
  // SIGINT 2 and SIGABRT 6 are how launchers and c10d's watchdog end
  // processes on purpose.
  for (int64_t s : {4, 7, 8, 9, 11}) {
    EXPECT_EQ(FaultSignal(ExitOf(-s)), s) << s;
    model::LogEvent by_signal = ExitOf(0);
    by_signal.signal = s;
    EXPECT_EQ(FaultSignal(by_signal), s) << s;
    EXPECT_TRUE(DiedUnexpectedly(ExitOf(-s))) << s;
  }
  for (int64_t s : {2, 6, 15}) EXPECT_EQ(FaultSignal(ExitOf(-s)), -1) << s;
  EXPECT_EQ(FaultSignal(ExitOf(1)), -1);
  EXPECT_EQ(SignalName(11), "SIGSEGV");
  EXPECT_EQ(SignalName(7), "SIGBUS");
  EXPECT_EQ(SignalName(64), "signal 64");
}

TEST(Crashed, TheLaunchersFirstFailureIsACrashUnlessItWasAConsequence) {
  using Role = model::LogEvent::ExitRole;
  model::testing::JobBuilder b;
  // testdata/torch/torchrun_os_exit: rank 1's os._exit(3) is the root cause.
  b.Event(1, ExitOf(3, Role::kFirstFailure)).FromLog(1);
  // torchrun_exit0: the root cause rank 2 (exit 1) lost its peer first.
  model::LogEvent lost;
  lost.kind = model::LogEvent::Kind::kPeerLost;
  b.Event(2, lost).Event(2, ExitOf(1, Role::kFirstFailure)).FromLog(2);
  // A rank its launcher stopped, then listed with -9 (SIGKILL after the
  // shutdown timeout): a victim, not a kill of its own.
  b.Event(0, ExitOf(0, Role::kStopped)).Event(0, ExitOf(-9)).FromLog(0);
  // A first failure that exited 0 is no failure of its own; -15 neither.
  b.Event(3, ExitOf(-15, Role::kFirstFailure)).FromLog(3);
  // testdata/torch/torchrun_log_dir: the root cause rank 4 ended by SIGABRT
  // (a C++ terminate at shutdown); rank 5 aborted after its own timeout (a
  // watchdog's abort: a consequence).
  b.Event(4, ExitOf(-6, Role::kFirstFailure)).FromLog(4);
  model::LogEvent timeout;
  timeout.kind = model::LogEvent::Kind::kTimeout;
  b.Event(5, timeout).Event(5, ExitOf(-6, Role::kFirstFailure)).FromLog(5);
  model::Job job = b.Build();
  EXPECT_TRUE(Crashed(job, 4));
  EXPECT_FALSE(Crashed(job, 5));
  EXPECT_TRUE(Crashed(job, 1));
  EXPECT_FALSE(Crashed(job, 2));
  EXPECT_FALSE(Crashed(job, 0));
  EXPECT_FALSE(Crashed(job, 3));
  EXPECT_FALSE(DiedUnexpectedly(ExitOf(-9, Role::kStopped)));
}

}  // namespace
}  // namespace hangdx::analyze
