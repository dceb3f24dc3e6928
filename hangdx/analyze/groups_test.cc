#include "hangdx/analyze/groups.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

GroupTable Resolve(const model::Job& job, model::DiagnosticSink* diags) {
  return GroupTable::Resolve(job, ResolveWorld(job, diags), diags);
}

TEST(GroupTable, SameNameWithOtherMembersIsTwoGroups) {
  // pg "1" is [0] on rank 0 and [1] on rank 1 (split_group).
  JobBuilder b("nccl");
  b.Coll(0, "1", 1, "all_reduce").Coll(1, "1", 1, "all_reduce");
  model::Job job = b.Build();
  job.dumps[0].pg_config["1"] = {"1", "sub", Ranks{0}, true};
  job.dumps[1].pg_config["1"] = {"1", "sub", Ranks{1}, true};
  model::DiagnosticSink diags;
  GroupTable t = Resolve(job, &diags);
  ASSERT_EQ(t.size(), 2);
  int g0 = t.GroupOf(job.dumps[0], "1"), g1 = t.GroupOf(job.dumps[1], "1");
  EXPECT_NE(g0, g1);
  EXPECT_EQ(t[g0].members, Ranks{0});
  EXPECT_EQ(t[g1].members, Ranks{1});
  EXPECT_EQ(t[g0].desc, "undefined");  // the op's description wins over the config's
  EXPECT_EQ(t.GroupOf(job.dumps[0], "2"), -1);
}

TEST(GroupTable, GlooMembersAreTheRanksThatRecordThePg) {
  // No pg_config: pg "0" is the world (3 ranks, highest seen); pg "7" is
  // recorded by ranks 0 and 2 only, so those are its inferred members.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Steps(0, "7", 1, 1).Steps(2, "7", 1, 1);
  model::Job job = b.Build();
  model::DiagnosticSink diags;
  GroupTable t = Resolve(job, &diags);
  const Group& world = t[t.GroupOf(job.dumps[0], "0")];
  const Group& seven = t[t.GroupOf(job.dumps[2], "7")];
  EXPECT_EQ(world.members, (Ranks{0, 1, 2}));
  EXPECT_TRUE(world.inferred);  // the world size itself was inferred
  EXPECT_EQ(seven.members, (Ranks{0, 2}));
  EXPECT_TRUE(seven.inferred);
  EXPECT_EQ(seven.Label(), "pg 7");
  EXPECT_EQ(world.Label(), "pg 0 (default_pg)");
  // Each member's collectives by seq, as (seq, op index in its dump).
  EXPECT_EQ(seven.coll[1], (std::vector<std::pair<int64_t, uint32_t>>{{1, 2}}));
}

TEST(GroupTable, ANonMemberRecordingThePgIsWarnedAndLeftOut) {
  JobBuilder b("nccl");
  b.Steps(0, "5", 1, 3).Steps(1, "5", 1, 1);
  model::Job job = b.Members("5", {0, 2}).Build();
  model::DiagnosticSink diags;
  GroupTable t = Resolve(job, &diags);
  const Group& g = t[t.GroupOf(job.dumps[1], "5")];
  EXPECT_EQ(g.members, (Ranks{0, 2}));
  EXPECT_EQ(g.coll[0].size(), 3u);
  EXPECT_EQ(g.DumpOf(2), nullptr);  // rank 2 left no dump
  std::vector<model::Diagnostic> d = diags.Take();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "trace_1");
  EXPECT_EQ(d[0].message, "records pg 5 whose recorded members (0,2) do not include this rank");
}

}  // namespace
}  // namespace hangdx::analyze
