#include "hangdx/analyze/checks/pg_local_wait.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(PgLocalWaitCheck, WaitsOnARankInsideAPgNameItInThatPgsNumbering) {
  // Global ranks 0 and 1 wait in a notify wait for rank 5 of group g (an
  // HCCL plog), whose global rank no file gives; rank 0 logged its timeout.
  JobBuilder b;
  b.Wait(0, "notify_wait", {5}, 3).Wait(1, "notify_wait", {5}, 3);
  b.Event(0, model::LogEvent::Kind::kTimeout, "notify wait timed out");
  model::Job job = b.Build();
  for (auto& d : job.dumps) d.wait->pg = "g", d.wait->pg_local = true;
  std::vector<Finding> fs = RunCheck(&PgLocalWaitCheck, job);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kMissingRank);
  EXPECT_TRUE(f.ranks_are_pg_local);
  EXPECT_EQ(f.pg_name, "g");
  EXPECT_EQ(f.seq, 3);
  EXPECT_EQ(f.culprit_ranks, Ranks{5});
  EXPECT_EQ(f.roles[0].ranks, (Ranks{0, 1}));
  EXPECT_EQ(f.summary,
            "ranks 0-1 wait in notify_wait of pg g for rank 5 of that pg (a rank inside the pg; its global rank is "
            "not in these files), which never arrived");
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].note, "line 3: notify wait timed out");
  // Such waits block their ranks but wait for no rank-graph node.
  RankAnalysis a = BuildRankAnalysis(job, {});
  ASSERT_FALSE(a.graph.snapshots().empty());
  EXPECT_EQ(a.graph.snapshots()[0].first, 0);
  EXPECT_TRUE(a.graph.graph().successors(a.graph.snapshots()[0].second).empty());
}

}  // namespace
}  // namespace hangdx::analyze
