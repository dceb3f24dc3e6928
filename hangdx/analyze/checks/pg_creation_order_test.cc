#include "hangdx/analyze/checks/pg_creation_order.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/analyze/checks/stall.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

// gloo: pg 'tp' is pg 1 on ranks 0 and 1, pg 2 on rank 2 (testdata/torch/i);
// every side is pending in its pg's seq 1. With `overlap` rank 0 also
// records pg 2 as 'tp'.
model::Job TpNamedTwice(bool overlap) {
  JobBuilder b;
  b.Coll(0, "1", 1, "all_reduce", false).Coll(1, "1", 1, "all_reduce", false).Coll(2, "2", 1, "all_reduce", false);
  if (overlap) b.Coll(0, "2", 1, "all_reduce", false);
  model::Job job = b.Build();
  for (auto& d : job.dumps)
    for (auto& op : d.ops) op.pg_desc = d.interner->Str("tp");
  return job;
}

TEST(PgCreationOrderCheck, OneDescriptionTwoPgNamesIsAnOrderInversion) {
  std::vector<Finding> fs = RunCheck(&PgCreationOrderCheck, TpNamedTwice(false));
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kOrderInversion);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.culprit_ranks, Ranks{2});
  EXPECT_EQ(f.cycle, (Ranks{0, 2}));
  EXPECT_EQ(f.summary,
            "process groups were created in different orders: pg 'tp' is pg 1 on ranks 0-1 and pg 2 on rank 2, so "
            "each side waits in a pg the other side is not using");
  ASSERT_EQ(f.roles.size(), 2u);
  EXPECT_EQ(f.roles[0].role, "pg 1 ('tp')");
  EXPECT_EQ(f.evidence.size(), 3u);
  // The stall check leaves what this one explains alone.
  EXPECT_TRUE(RunCheck(&StallCheck, TpNamedTwice(false)).empty());
}

TEST(PgCreationOrderCheck, ARankInBothPgsIsNoCreationOrderProblem) {
  EXPECT_TRUE(RunCheck(&PgCreationOrderCheck, TpNamedTwice(true)).empty());
}

}  // namespace
}  // namespace hangdx::analyze
