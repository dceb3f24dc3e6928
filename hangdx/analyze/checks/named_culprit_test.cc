// The named-culprit check: a producer's own verdict (desync report, stall
// inspector, fr_trace) as a finding, by the rules in named_culprit.h.
#include "hangdx/analyze/checks/named_culprit.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::LogEvent;
using model::testing::JobBuilder;
using model::testing::RankRange;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// A report line of kind `kind` at `line` of rank 0's log naming `ranks`
// as culprits and `ready` as arrived.
LogEvent Report(Ranks ranks, Ranks ready, int64_t line, LogEvent::Kind kind = LogEvent::Kind::kCulprit) {
  LogEvent e;
  e.kind = kind;
  e.message = "report line " + std::to_string(line);
  e.line = line;
  e.ranks = std::move(ranks);
  e.ready_ranks = std::move(ready);
  return e;
}

TEST(NamedCulpritCheck, ADesyncReportsLaggingRankIsMissing) {
  // pytorch#152623: rank 0's desync report, "[Rank 7] is the lagging rank"
  // of an 8-rank job, printed after a 600 s wait.
  LogEvent e = Report({7}, {}, 12);
  e.pg = "0";
  e.seq = 5;
  e.op = "ALLREDUCE";
  e.waited_ms = 600000;
  JobBuilder b;
  b.Event(0, e).FromLog(0).World(8);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.culprit_ranks, Ranks{7});
  EXPECT_EQ(f.pg_name, "0");
  EXPECT_EQ(f.seq, 5);
  EXPECT_EQ(f.op, "ALLREDUCE");
  EXPECT_EQ(f.summary, "rank 7 never joined the collective the other ranks wait in, as the report says");
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].note, "line 12: report line 12");
  EXPECT_EQ(f.details[0], "the report was printed after a wait of 600 s");
}

TEST(NamedCulpritCheck, AJobWideReportCountsWithoutAReportingRank) {
  // pytorch#140969: fr_trace's "missing ranks: {3, 4, 5, 6, 7}" of a world
  // of 8, in a file no rank printed (Job::job_events, no dump at all).
  LogEvent e = Report({3, 4, 5, 6, 7}, {}, 1);
  e.file = "fr_trace.txt";
  e.pg = "0";
  e.seq = 31117;
  model::Job job = JobBuilder().World(8).Build();
  job.job_events.push_back(e);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{3, 4, 5, 6, 7}));
  ASSERT_EQ(fs[0].evidence.size(), 1u);
  EXPECT_EQ(fs[0].evidence[0].file, "fr_trace.txt");
  EXPECT_EQ(fs[0].evidence[0].rank, -1);
}

TEST(NamedCulpritCheck, AStallLineListingTheReadyRanksBlamesTheOthers) {
  // Horovod's early stall line names only the ranks that submitted: 0, 1, 3 of 4.
  JobBuilder b;
  b.Event(0, Report({}, {0, 1, 3}, 4, LogEvent::Kind::kStall)).FromLog(0).World(4);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
}

TEST(NamedCulpritCheck, EveryRankJoinedAndNoneFinishedIsTheCollectiveItself) {
  // llamafactory#9496: the desync report says all 4 ranks joined and none finished.
  JobBuilder b;
  b.Event(0, Report(RankRange(0, 4), RankRange(0, 4), 7)).FromLog(0).World(4);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kResourceDeadlock);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
}

TEST(NamedCulpritCheck, EveryRankNamedAsMissingIsAMismatch) {
  JobBuilder b;
  b.Event(0, Report(RankRange(0, 4), {}, 7)).FromLog(0).World(4);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1, 2, 3}));
}

TEST(NamedCulpritCheck, OneReportsTensorLinesSplitTheRanksAndTheSmallerSideIsTheOddOneOut) {
  // Horovod 0.13.6-0.16.1 prints one line per stalled tensor under one
  // header: "loss [missing ranks: 0, 1, 2]", then "grad_a [missing ranks: 3]",
  // "grad_b [missing ranks: 3]" on the next lines. One report, not three
  // that blame different ranks in turn (a slow job): rank 3 alone submitted
  // the loss while ranks 0-2 submitted the gradients.
  JobBuilder b;
  b.Event(0, Report({0, 1, 2}, {}, 3)).Event(0, Report({3}, {}, 4)).Event(0, Report({3}, {}, 5));
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.FromLog(0).World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  ASSERT_GE(fs[0].details.size(), 2u);
  EXPECT_EQ(fs[0].details[0],
            "the report splits them in 2 groups, each lacking what another submitted: rank 3; ranks 0-2");
}

TEST(NamedCulpritCheck, TwoEqualSidesOfOneReportAreCandidatesNotCulprits) {
  // Ranks 0-1 lack tensor A, ranks 2-3 lack tensor B: nothing says which
  // side is on the wrong code path.
  JobBuilder b;
  b.Event(0, Report({0, 1}, {}, 3)).Event(0, Report({2, 3}, {}, 4));
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.FromLog(0).World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, (Ranks{0, 1, 2, 3}));
  EXPECT_FALSE(fs[0].would_decide.empty());
}

TEST(NamedCulpritCheck, ReportLinesWithTheirOwnWaitAreSeparateReportsEvenOnConsecutiveLines) {
  // horovod#334: two one-line stall reports (each with its wait) on
  // consecutive lines name different ranks: the job is slow as a whole.
  LogEvent first = Report({2, 3}, {}, 1), second = Report({0, 6}, {}, 2);
  first.waited_ms = second.waited_ms = 60000;
  JobBuilder b;
  b.Event(0, first).Event(0, second).FromLog(0).World(8);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
}

TEST(NamedCulpritCheck, ARankEveryReportNamesIsStuckWhileTheOthersChange) {
  // Three reports a minute apart: tensor t_a is missing rank 2 in each, a
  // second tensor misses rank 1, then 3, then 0 (tester3 G3). Rank 2 is
  // stuck; not a slow job.
  JobBuilder b;
  for (int k = 0; k < 3; ++k) {
    LogEvent other = Report({k == 0 ? 1 : k == 1 ? 3 : 0}, {}, 4 + 4 * k);
    b.Event(0, Report({2}, {}, 3 + 4 * k)).Event(0, other);
  }
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.FromLog(0).World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
}

TEST(NamedCulpritCheck, ReadyRanksAloneWithNoWorldSizeNameNobody) {
  // "t [ready ranks: 0, 1, 2]" from rank 0's log and nothing else: the
  // missing ranks are those of a world nothing gives. Before: "ranks
  // joined the collective" with an empty list.
  JobBuilder b;
  b.Event(0, Report({}, {0, 1, 2}, 1, LogEvent::Kind::kStall)).FromLog(0);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].summary,
            "the report lists only the ranks that are ready (0-2): which ranks it waits for depends on the world "
            "size, which nothing gives");
}

TEST(NamedCulpritCheck, SomeRanksJoinedAndDidNotFinishIsUndecided) {
  JobBuilder b;
  b.Event(0, Report({2}, {0, 1, 2}, 7)).FromLog(0).World(4);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
}

TEST(NamedCulpritCheck, ProgressAfterTheReportMakesItAStraggler) {
  // horovod#1737: a stall report for rank 1 at line 3, then training goes on (line 10).
  JobBuilder b;
  LogEvent progress;
  progress.kind = LogEvent::Kind::kProgress;
  progress.message = "Epoch 1 loss 0.3";
  progress.line = 10;
  b.Event(0, Report({1}, {}, 3)).Event(0, progress).FromLog(0).World(2);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
}

TEST(NamedCulpritCheck, AReportedWaitWithinTheLoggedRhythmIsAStraggler) {
  // horovod#1442: steps take 13.2 s ("latency=13229.6 ms/batch"); the stall
  // inspector's header (60 s) then "Stalled ranks: 4". 60 s is 4.5 steps,
  // under kStallFactor (10): rank 4 is late, not hung. At 140 s (10.6
  // steps) it is a hang.
  for (int64_t waited_ms : {int64_t{60000}, int64_t{140000}}) {
    SCOPED_TRACE(waited_ms);
    JobBuilder b;
    for (int64_t line = 1; line <= 3; ++line) {
      LogEvent step;
      step.kind = LogEvent::Kind::kProgress;
      step.message = "[step 20999] latency=13229.6 ms/batch";
      step.waited_ms = 13229;
      step.line = line;
      b.Event(0, step);
    }
    LogEvent header = Report({}, {}, 9, LogEvent::Kind::kStall);
    header.waited_ms = waited_ms;
    b.Event(0, header).Event(0, Report({4}, {}, 10)).FromLog(0).World(8);
    std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
    ASSERT_EQ(fs.size(), 1u);  // the header is the report's, not a stall of its own
    EXPECT_EQ(fs[0].culprit_ranks, Ranks{4});
    EXPECT_EQ(fs[0].kind, waited_ms == 60000 ? Kind::kStraggler : Kind::kMissingRank);
    EXPECT_EQ(fs[0].hang, waited_ms != 60000);
  }
}

TEST(NamedCulpritCheck, ReadyRanksOfAStatusLineAtTheSameSeqCount) {
  // llamafactory#9496: the desync report names pg ranks 0-3 as joined and
  // not finished; its snapshot line lists 0-3 as started at the same seq.
  JobBuilder b;
  LogEvent culprit = Report(RankRange(0, 4), {}, 6);
  culprit.seq = 730;
  culprit.ranks_pg_local = true;
  LogEvent started;
  started.kind = LogEvent::Kind::kOther;
  started.seq = 730;
  started.ready_ranks = RankRange(0, 4);
  started.ranks_pg_local = true;
  started.line = 8;
  b.Event(2, culprit).Event(2, started).FromLog(2).World(16);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  // Pg-local ranks 0-3 are the whole pg as the report knows it, whatever the world.
  EXPECT_EQ(fs[0].kind, Kind::kResourceDeadlock);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
}

TEST(NamedCulpritCheck, ReportsNamingMoreRanksThanTheInferredWorldWidenIt) {
  // automl#563: only rank 0's log (world inferred 1); the stall inspector
  // names ranks 0 and 1 as stalled: each waits for the other, a mismatch.
  JobBuilder b;
  b.Event(0, Report({0, 1}, {}, 2)).FromLog(0);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
}

TEST(NamedCulpritCheck, ReportsThatBlameDifferentRanksInTurnAreASlowJob) {
  // horovod#334: one report names rank 1, the next rank 2.
  JobBuilder b;
  b.Event(0, Report({1}, {}, 3)).Event(0, Report({2}, {}, 9)).FromLog(0).World(4);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kStraggler);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
}

TEST(NamedCulpritCheck, AStallWarningNamingNobodyIsAHangOnlyWhenItRepeats) {
  // vllm: "No available shared memory broadcast block found in 60 seconds".
  JobBuilder once;
  once.Event(0, Report({}, {}, 3, LogEvent::Kind::kStall)).FromLog(0);
  std::vector<Finding> fs = RunCheck(&NamedCulpritCheck, once.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);

  JobBuilder twice;
  twice.Event(0, Report({}, {}, 3, LogEvent::Kind::kStall))
      .Event(0, Report({}, {}, 9, LogEvent::Kind::kStall))
      .FromLog(0);
  fs = RunCheck(&NamedCulpritCheck, twice.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].hang);
  EXPECT_EQ(fs[0].candidates, Ranks{0});
  EXPECT_FALSE(fs[0].would_decide.empty());
}

}  // namespace
}  // namespace hangdx::analyze
