// The named-culprit agreement pass: a producer's verdict merged into the
// finding from the records that agrees with it, or both kept, each saying
// what the other names.
#include "hangdx/analyze/passes/named_culprit_agreement.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hangdx::analyze
