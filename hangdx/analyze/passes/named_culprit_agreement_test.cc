// The named-culprit agreement pass: a producer's verdict merged into the
// finding from the records that agrees with it, or both kept, each saying
// what the other names.
#include "hangdx/analyze/passes/named_culprit_agreement.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::MakeFinding;
using Ranks = std::vector<model::Rank>;

// A producer's finding naming `said` and one from the records naming `seen`.
FindingSink TwoVerdicts(Ranks said, Ranks seen) {
  FindingSink sink;
  sink.Begin("missing_rank", Scope::kWaitState);
  Finding records = MakeFinding(Kind::kMissingRank, seen);
  records.summary = "from the dumps";
  sink.Add(records);
  sink.Begin("named_culprit", Scope::kWaitState);
  Finding producer = MakeFinding(Kind::kMissingRank, said);
  producer.summary = "from the desync report";
  producer.evidence.push_back({"rank0.log", 0, -1, "line 12: [Rank 7] is the lagging rank"});
  sink.Add(producer);
  return sink;
}

TEST(NamedCulpritAgreementPass, AgreeingVerdictsAreOneFindingWithBothEvidences) {
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink = TwoVerdicts({7}, {7});
  NamedCulpritAgreementPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 1u);
  const Finding& f = sink.entries()[0].finding;
  EXPECT_STREQ(sink.entries()[0].check, "missing_rank");
  EXPECT_EQ(f.culprit_ranks, Ranks{7});
  EXPECT_EQ(f.details, std::vector<std::string>{"the producer's own report names the same rank (from the desync "
                                                "report)"});
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].note, "line 12: [Rank 7] is the lagging rank");
}

TEST(NamedCulpritAgreementPass, DisagreeingVerdictsBothStayAndSayWhatTheOtherNames) {
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink = TwoVerdicts({7}, {3});
  NamedCulpritAgreementPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 2u);
  EXPECT_EQ(sink.entries()[0].finding.details,
            std::vector<std::string>{"but the producer's own report names rank 7 instead: from the desync report"});
  EXPECT_EQ(sink.entries()[1].finding.details,
            std::vector<std::string>{"but the other evidence names rank 3: from the dumps"});
}

TEST(NamedCulpritAgreementPass, AStallThatNamesNoOneIsAbsorbedByTheNamedCulprit) {
  // pytorch#152623: rank 0's log alone; its timeout makes the stall check's
  // "all 1 recorded members are in all_reduce" (no culprit), its desync
  // report names rank 7 of 8. The whole analysis: one finding, rank 7.
  JobBuilder b("nccl");
  b.Coll(0, "0", 5, "all_reduce", false, {8}, "Float", true).FromLog(0);
  model::LogEvent timeout;
  timeout.kind = model::LogEvent::Kind::kTimeout;
  timeout.message = "Watchdog caught collective operation timeout";
  timeout.pg = "0";
  timeout.seq = 5;
  b.Event(0, timeout);
  model::LogEvent report;
  report.kind = model::LogEvent::Kind::kCulprit;
  report.message = "[7] finished collective #4, but didn't join collective #5";
  report.ranks = {7};
  report.pg = "0";
  report.seq = 5;
  b.Event(0, report);
  for (int64_t world : {int64_t{-1}, int64_t{8}}) {
    SCOPED_TRACE(world);
    // World unknown: the stall check names no one; world 8: missing_rank
    // says ranks 1-7 left no line. Either way the report's rank 7 leads.
    model::Job job = b.World(world).Build();
    Diagnosis d = Analyze(job);
    ASSERT_EQ(d.findings.size(), 1u);
    EXPECT_EQ(d.findings[0].kind, Kind::kMissingRank);
    EXPECT_EQ(d.findings[0].culprit_ranks, Ranks{7});
    EXPECT_TRUE(d.hang);
    ASSERT_FALSE(d.findings[0].details.empty());
    EXPECT_EQ(d.findings[0].details.back().rfind("the records agree", 0), 0u) << d.findings[0].details.back();
  }
}

}  // namespace
}  // namespace hangdx::analyze
