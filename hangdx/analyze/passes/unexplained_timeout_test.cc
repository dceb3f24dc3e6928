#include "hangdx/analyze/passes/unexplained_timeout.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

// Ranks 0 and 1 logged a watchdog timeout; world 3, rank 2 left no log.
model::Job TwoTimeouts() {
  JobBuilder b;
  for (int r = 0; r < 2; ++r)
    b.Event(r, model::LogEvent::Kind::kTimeout, "Watchdog caught collective operation timeout").FromLog(r);
  return b.World(3).Build();
}

TEST(UnexplainedTimeoutPass, TimeoutsNothingExplainsAreAnUndecidedError) {
  model::Job job = TwoTimeouts();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  UnexplainedTimeoutPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.candidates, Ranks{2});
  EXPECT_EQ(f.would_decide, "the logs or Flight Recorder dumps of rank 2");
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1}));
  EXPECT_EQ(f.roles[1].role, "no log");
  EXPECT_EQ(f.summary,
            "ranks 0-1 report a timed-out collective, but the data given does not show whom they wait for: no log "
            "from rank 2");
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[1].note, "line 3: Watchdog caught collective operation timeout");
}

TEST(UnexplainedTimeoutPass, ALogOfNothingKnownIsSaidAsSuch) {
  // Rank 2's log was given but no format read it (it slept, printing its
  // own lines): it is not "no log from rank 2".
  model::Job job = TwoTimeouts();
  model::FileRead fr;
  fr.file = "logs/rank_2.log";
  fr.rank = 2;
  fr.bytes = 812;
  job.file_reads.push_back(fr);
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  UnexplainedTimeoutPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.summary,
            "ranks 0-1 report a timed-out collective, but the data given does not show whom they wait for: rank 2's "
            "log (logs/rank_2.log) has no line hangdx knows: no timeout, no error");
}

TEST(UnexplainedTimeoutPass, OneTimeoutOfManyRanksNamesNoCulprit) {
  // lmdeploy#3354: one rank (6) of 7 logs a timed-out broadcast and names no
  // peer: ranks 0-5 are unseen, not shown to be at fault.
  JobBuilder b;
  b.Event(6, model::LogEvent::Kind::kTimeout, "EI0002: The wait execution of the Notify register times out.")
      .FromLog(6);
  model::Job job = b.World(7).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  UnexplainedTimeoutPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_TRUE(f.hang);
  EXPECT_TRUE(f.culprit_ranks.empty());
  EXPECT_TRUE(f.candidates.empty());
  EXPECT_EQ(f.roles[1].ranks, (Ranks{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.would_decide, "the logs or Flight Recorder dumps of ranks 0-5");
}

TEST(UnexplainedTimeoutPass, AWaitStateErrorExplainsThemADeviceOneDoesNot) {
  model::Job job = TwoTimeouts();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("device_level", Scope::kDevice);
  sink.Add(testing::MakeFinding(Kind::kStreamCycle, {0}));
  UnexplainedTimeoutPass(a, &sink, nullptr);
  EXPECT_EQ(sink.entries().size(), 2u);
  FindingSink rank;
  rank.Begin("missing_rank", Scope::kWaitState);
  rank.Add(testing::MakeFinding(Kind::kMissingRank, {2}));
  UnexplainedTimeoutPass(a, &rank, nullptr);
  EXPECT_EQ(rank.entries().size(), 1u);
}

TEST(UnexplainedTimeoutPass, ASeenRankWithNoTimeoutIsTheSuspect) {
  // testdata/torch/thread_crash's stderr: ranks 0 and 2 time out, rank 1's
  // log shows a loader thread's exception and no timeout (world unknown).
  // Rank 3 lost its peer: it was in the collective, so no suspect.
  using K = model::LogEvent::Kind;
  JobBuilder b;
  b.Event(0, K::kTimeout, "Timed out waiting 4000ms for recv operation to complete").FromLog(0);
  b.Event(1, K::kThreadError, "scenarios._BadShard: cannot decode record 32").FromLog(1);
  b.Event(2, K::kTimeout, "Timed out waiting 4000ms for send operation to complete").FromLog(2);
  b.Event(3, K::kPeerLost, "Connection closed by peer [127.0.0.1]:18823").FromLog(3);
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  UnexplainedTimeoutPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_EQ(f.culprit_ranks, Ranks{1});
  EXPECT_EQ(f.candidates, Ranks{1});
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 2}));
  EXPECT_EQ(f.roles[1].role, "no timeout");
  ASSERT_EQ(f.evidence.size(), 3u);
  EXPECT_EQ(f.evidence[2].rank, 1);
  EXPECT_EQ(f.evidence[2].note, "line 3: scenarios._BadShard: cannot decode record 32");
  EXPECT_NE(f.summary.find("rank 1, seen, reports no timeout and likely never joined it"), std::string::npos);
  // Rank 1 was in it too (it lost its peer): no one is left to suspect.
  JobBuilder c;
  c.Event(0, K::kTimeout, "Timed out waiting 4000ms for send operation to complete").FromLog(0);
  c.Event(1, K::kPeerLost, "Connection closed by peer [127.0.0.1]:18823").FromLog(1);
  model::Job both = c.Build();
  RankAnalysis ab = BuildRankAnalysis(both, {});
  FindingSink s2;
  UnexplainedTimeoutPass(ab, &s2, nullptr);
  ASSERT_EQ(s2.entries().size(), 1u);
  EXPECT_TRUE(s2.entries()[0].finding.culprit_ranks.empty());
}

// The pass's findings for 3 ranks after two all_reduces: ranks 0 and 2 time
// out in broadcast seq 3 (send / recv operation); rank 1's dump records that
// broadcast, completed, or ends before it.
std::vector<Finding> BroadcastTimedOutOn0And2(bool rank1_reached_seq3) {
  using K = model::LogEvent::Kind;
  JobBuilder b;
  for (int r = 0; r < 3; ++r) {
    b.Steps(r, "0", 1, 2);
    if (r != 1 || rank1_reached_seq3) b.Coll(r, "0", 3, "broadcast");
  }
  b.Event(0, K::kTimeout, "Timed out waiting 8000ms for send operation to complete");
  b.Event(2, K::kTimeout, "Timed out waiting 8000ms for recv operation to complete");
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  UnexplainedTimeoutPass(a, &sink, nullptr);
  std::vector<Finding> out;
  for (const auto& e : sink.entries()) out.push_back(e.finding);
  return out;
}

// testdata/torch/bcast_src: ranks 0 and 2 time out in broadcast seq 3 (rank 2
// passed another src); rank 1's Flight Recorder has it completed. Rank 1
// joined it: not a suspect; every rank reached it, so the answer names the
// three as candidates and asks for the root each passed. Was "rank 1 ...
// likely never joined it".
TEST(UnexplainedTimeoutPass, ARankWhoseDumpCompletedTheCollectiveIsNoSuspect) {
  std::vector<Finding> fs = BroadcastTimedOutOn0And2(/*rank1_reached_seq3=*/true);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kUndecided);
  EXPECT_TRUE(f.culprit_ranks.empty());
  EXPECT_EQ(f.candidates, (Ranks{0, 1, 2}));
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[1].ranks, Ranks{1});
  EXPECT_NE(f.summary.find("by the Flight Recorder rank 1 completed it"), std::string::npos) << f.summary;
  EXPECT_EQ(f.fix_hint, "make every rank pass the same src/dst (root) to this collective");
  // Rank 1's dump ends before seq 3: it never reached it, the suspect.
  fs = BroadcastTimedOutOn0And2(/*rank1_reached_seq3=*/false);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
}

}  // namespace
}  // namespace hangdx::analyze
