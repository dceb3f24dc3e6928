#include "hangdx/analyze/checks/device_level.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/device_job_builder.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using Kd = model::DevOp::Kind;

TEST(DeviceLevelCheck, AddsTheDeviceEnginesFindingsAndItsRanksWithoutARankRecord) {
  // Device rank 0: stream s1 waits for event B that s2 records after its
  // wait for A, recorded by s1 after its wait: a stream cycle. Rank 0 also
  // has a rank-level dump; device rank 1 (idle) has none.
  model::testing::DeviceJobBuilder d;
  model::OpId wb = d.Op(0, Kd::kWait, "s1", "B"), ra = d.Op(0, Kd::kRecord, "s1", "A");
  model::OpId wa = d.Op(0, Kd::kWait, "s2", "A"), rb = d.Op(0, Kd::kRecord, "s2", "B");
  d.Stream(0, "s1", {wb, ra}).Stream(0, "s2", {wa, rb});
  model::OpId idle = d.Op(1, Kd::kCompute, "s1");
  d.Stream(1, "s1", {idle}).Done(idle);
  model::Job job = model::testing::JobBuilder().Steps(0, "0", 1, 1).Build();
  job.device.push_back(d.Build());
  RankAnalysis a = BuildRankAnalysis(job, {});
  FindingSink sink;
  sink.Begin("device_level", Scope::kDevice);
  DeviceLevelCheck(a, &sink);
  ASSERT_EQ(sink.entries().size(), 1u);
  EXPECT_EQ(sink.entries()[0].scope, Scope::kDevice);
  EXPECT_EQ(sink.entries()[0].finding.kind, Kind::kStreamCycle);
  ASSERT_EQ(sink.device_ranks.size(), 1u);
  EXPECT_EQ(sink.device_ranks[0].rank, 1);
  EXPECT_EQ(sink.device_ranks[0].state, "idle");
  EXPECT_TRUE(sink.device_edges.empty());  // the cycle stays on one rank
}

}  // namespace
}  // namespace hangdx::analyze
