// The reported-mismatch check: a mismatch only a log reports names the
// ranks its message names, never the rank that reported it.
#include "hangdx/analyze/checks/reported_mismatch.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::LogEvent;
using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

LogEvent Reported(const std::string& id, const std::string& message, Ranks named = {}) {
  LogEvent e;
  e.kind = LogEvent::Kind::kMismatch;
  e.message_id = id;
  e.message = message;
  e.ranks = std::move(named);
  return e;
}

// testdata/torch/d's stderr: rank 2 (a receiver) aborts with gloo's size
// check; ranks 0, 1, 3 lose their connection to it.
JobBuilder GlooSizeMismatch() {
  JobBuilder b;
  b.Event(2, LogEvent::Kind::kCrash, "terminate called after throwing an instance of 'gloo::EnforceNotMet'")
      .Event(2, Reported("torch.gloo.enforce_size_mismatch_v2",
                         "what():  [enforce fail at /w/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
                         "op.preamble.length <= op.nbytes. 12 vs 8. Received data "
                         "size doesn't match expected size."))
      .FromLog(2);
  for (int r : {0, 1, 3}) b.Event(r, LogEvent::Kind::kPeerLost, "Connection closed by peer").FromLog(r);
  return b;
}

TEST(ReportedMismatchCheck, TheReceiverThatAbortedIsAVictimAndTheOthersAreCandidates) {
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, GlooSizeMismatch().World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kSizeMismatch);
  EXPECT_TRUE(f.hang);
  EXPECT_TRUE(f.culprit_ranks.empty());
  EXPECT_EQ(f.candidates, (Ranks{0, 1, 3}));
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].ranks, Ranks{2});
  EXPECT_EQ(f.roles[1].role, "aborted on it");
  EXPECT_EQ(f.summary.rfind("rank 2 reports that the ranks of a collective disagree on its sizes or dtypes: ", 0), 0u);
  // Quoted without the source path in brackets and the "what():" prefix.
  EXPECT_NE(f.summary.find(": \"op.preamble.length <= op.nbytes. 12 vs 8. Received data size doesn't match expected "
                           "size.\"; "),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("; rank 2 aborted on it; the message does not name the rank that differs"),
            std::string::npos);
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].rank, 2);
  EXPECT_TRUE(ReportedAMismatch(GlooSizeMismatch().Build(), 2));
  EXPECT_FALSE(ReportedAMismatch(GlooSizeMismatch().Build(), 0));
}

TEST(ReportedMismatchCheck, TheRanksAMessageNamesAreTheCulprits) {
  // NCCL 2.4-2.7: "... at and around rank 3" printed by rank 1 (global ranks here).
  JobBuilder b;
  b.Event(1, Reported("nccl.mismatch_detected_legacy", "Mismatched collective detected ... around rank 3", {3}))
      .FromLog(1);
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_TRUE(fs[0].candidates.empty());
}

TEST(ReportedMismatchCheck, AMessageThatComparesTwoRanksMakesBothCandidates) {
  // SimpleTuner#2712: rank 1's DETAIL error compares it with rank 7.
  JobBuilder b;
  LogEvent e = Reported("torch.detail.mismatch_seq",
                        "Detected mismatch between collectives on ranks. Rank 1 is running collective: "
                        "CollectiveFingerPrint(SequenceNumber=101, OpType=ALLGATHER, ...), but Rank 7 is running "
                        "collective: CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE).");
  e.peer = 7;
  b.Event(1, e).FromLog(1).Event(0, LogEvent::Kind::kOther, "Model components unloaded").FromLog(0);
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, b.World(8).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, (Ranks{1, 7}));
  EXPECT_EQ(fs[0].roles[1].role, "the other side");
  EXPECT_NE(fs[0].summary.find("; it compares ranks 1,7 and cannot tell which of them differs"), std::string::npos)
      << fs[0].summary;
}

TEST(ReportedMismatchCheck, AFingerprintCheckRaisesItIsNoHang) {
  JobBuilder b;
  for (int r : {0, 1})
    b.Event(r, Reported("torch.detail.mismatch_seq", "Detected mismatch between collectives on ranks. Rank 0 ..."))
        .FromLog(r);
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_FALSE(fs[0].hang);
  EXPECT_EQ(fs[0].roles[0].ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].summary.rfind("ranks 0-1 report that the ranks of a process group call different collectives", 0),
            0u);
}

TEST(ReportedMismatchCheck, AJobWideReportNamesItsRanksWithoutAReporter) {
  // fr_trace's "Collective sequence number: 1487 has errors" naming rank 1.
  model::Job job = JobBuilder().World(2).Build();
  job.job_events.push_back(
      Reported("torch.fr.collective_has_errors", "Collective sequence number: 1487 has errors", {1}));
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
  EXPECT_TRUE(fs[0].roles.empty());
  EXPECT_EQ(
      fs[0].summary.rfind("a job-wide report says that the ranks of a process group call different collectives", 0),
      0u);
}

// The analyzer's error type decides what kind of mismatch it reports.
TEST(ReportedMismatchCheck, TheReportsErrorTypeDecidesSizesOrCalls) {
  for (const auto& [error, kind] :
       std::vector<std::pair<std::string, Kind>>{{"SIZE_OR_SYNTAX_MISMATCH", Kind::kSizeMismatch},
                                                 {"COLLECTIVE_DTYPE_MISMATCH", Kind::kSizeMismatch},
                                                 {"COLLECTIVE_TYPE_MISMATCH", Kind::kCollectiveMismatch}}) {
    model::Job job = JobBuilder().World(128).Build();
    LogEvent e = Reported("torch.fr.collective_errors_v1", "Collective 39 at entry 38 errors", {22});
    e.error = error;
    job.job_events.push_back(e);
    std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, job);
    ASSERT_EQ(fs.size(), 1u) << error;
    EXPECT_EQ(fs[0].kind, kind) << error;
    EXPECT_EQ(fs[0].culprit_ranks, Ranks{22}) << error;
  }
}

// pytorch#151666: rank 1 'completed' seq 1487 where the reference rank 0
// has it 'scheduled'. Same call, different states: undecided between the
// rank named and the reference, never "rank 1 called a different one".
TEST(ReportedMismatchCheck, AStateMismatchIsUndecidedBetweenTheNamedRankAndTheReference) {
  model::Job job = JobBuilder().World(2).Build();
  for (int seq : {1487, 1488}) {
    LogEvent e = Reported("torch.fr.collective_has_errors",
                          "Collective sequence number: " + std::to_string(seq) + " has errors", {1});
    e.error = "COLLECTIVE_STATE_MISMATCH";
    e.pg = "0";
    e.seq = seq;
    job.job_events.push_back(e);
  }
  std::vector<Finding> fs = RunCheck(&ReportedMismatchCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].candidates, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].seq, 1487);
  EXPECT_EQ(fs[0].evidence.size(), 2u);
  EXPECT_NE(fs[0].summary.find("recorded different states"), std::string::npos) << fs[0].summary;
  // Beside a report of different calls, the states add nothing: that one decides.
  LogEvent calls = Reported("torch.fr.collective_has_errors", "Collective sequence number: 9 has errors", {1});
  calls.error = "COLLECTIVE_TYPE_MISMATCH";
  job.job_events.push_back(calls);
  fs = RunCheck(&ReportedMismatchCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
}

TEST(ReportedMismatchCheck, RecordsThatShowTheMismatchLeaveItToCollectiveMismatch) {
  JobBuilder b = GlooSizeMismatch();
  b.Coll(0, "0", 3, "all_reduce", false).Coll(1, "0", 3, "all_gather", false).Members("0", {0, 1});
  EXPECT_TRUE(RunCheck(&ReportedMismatchCheck, b.Build()).empty());
  EXPECT_TRUE(RunCheck(&ReportedMismatchCheck, JobBuilder().Steps(0, "0", 1, 3).Build()).empty());
}

}  // namespace
}  // namespace hangdx::analyze
