#include "hangdx/analyze/passes/unnamed_crash.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

TEST(UnnamedCrashPass, ACrashNobodyWaitsForIsStillNamed) {
  // vllm#6042: only the dying rank's log.
  JobBuilder b;
  b.Event(3, model::LogEvent::Kind::kCrash, "CUDA error: an illegal memory access was encountered").FromLog(3);
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  Diagnosis out;
  testing::RunThrough(a, "unnamed_crash", &sink, &out);
  ASSERT_EQ(sink.entries().size(), 1u);
  EXPECT_STREQ(sink.entries()[0].check, "unnamed_crash");
  EXPECT_EQ(sink.entries()[0].scope, Scope::kWaitState);
  EXPECT_EQ(sink.entries()[0].finding.kind, Kind::kCrashedRank);
  EXPECT_EQ(sink.entries()[0].finding.culprit_ranks, Ranks{3});
}

TEST(UnnamedCrashPass, OnlyWaitStateFindingsNameACrash) {
  JobBuilder b;
  b.Event(3, model::LogEvent::Kind::kCrash, "abort").FromLog(3);
  model::Job job = b.Build();
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("latent_order", Scope::kHistory);
  sink.Add(testing::MakeFinding(Kind::kOrderInversion, {3}, Severity::kWarning));
  UnnamedCrashPass(a, &sink, nullptr);
  ASSERT_EQ(sink.entries().size(), 2u);  // a history finding does not count
  sink.Begin("missing_rank", Scope::kWaitState);
  sink.Add(testing::MakeFinding(Kind::kMissingRank, {3}));
  size_t before = sink.entries().size();
  UnnamedCrashPass(a, &sink, nullptr);
  EXPECT_EQ(sink.entries().size(), before);  // named now: nothing added
}

}  // namespace
}  // namespace hangdx::analyze
