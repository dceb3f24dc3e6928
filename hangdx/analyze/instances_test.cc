#include "hangdx/analyze/instances.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using Ranks = std::vector<model::Rank>;

// Steps 1 and 2 of the rank-level analysis on `job`.
GroupTable Groups(const model::Job& job) {
  model::DiagnosticSink diags;
  return GroupTable::Resolve(job, ResolveWorld(job, &diags), &diags);
}

TEST(Instances, OnlyProblemsAndPendingSeqsAreKept) {
  // Seqs 1-3 done everywhere; rank 2 never reached seq 4.
  JobBuilder b("nccl");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 3);
  b.Coll(0, "0", 4, "all_reduce", false).Coll(1, "0", 4, "all_reduce", false);
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  GroupTable g = Groups(job);
  InstanceTable t = BuildInstances(g, {});
  ASSERT_EQ(t.list.size(), 1u);
  const Instance& in = t.list[0];
  EXPECT_EQ(in.seq, 4);
  EXPECT_EQ(in.arrived, (Ranks{0, 1}));
  EXPECT_EQ(in.not_reached, Ranks{2});
  EXPECT_TRUE(in.no_dump.empty());
  EXPECT_TRUE(in.any_pending);
  EXPECT_FALSE(in.all_in_flight);  // NCCL: a pending op is no evidence of progress
  EXPECT_EQ(t.max_seq[0], 4);
  EXPECT_EQ(t.Find(0, 4), 0);
  EXPECT_EQ(t.Find(0, 3), -1);
}

TEST(Instances, EvictedSeqsArePassedAndNoDumpIsSuspectedOnlyWhereOthersStopped) {
  // Rank 1's ring buffer kept seqs 5-6 only; rank 2 has no dump (world 3).
  // Seq 4: rank 0 arrived, rank 1 got past it (evicted), rank 2 took part
  // (rank 0 went on to 5): no problem. Seq 6: ranks 0 and 1 wait, rank 2 is
  // the suspect.
  JobBuilder b("nccl");
  b.Steps(0, "0", 4, 5).Coll(0, "0", 6, "all_reduce", false);
  b.Steps(1, "0", 5, 5).Coll(1, "0", 6, "all_reduce", false);
  model::Job job = b.World(3).Build();
  GroupTable g = Groups(job);
  EXPECT_FALSE(EvaluateInstance(g, 0, 4, {})->problem());
  std::optional<Instance> six = EvaluateInstance(g, 0, 6, {});
  ASSERT_TRUE(six);
  EXPECT_EQ(six->arrived, (Ranks{0, 1}));
  EXPECT_EQ(six->no_dump, Ranks{2});
  EXPECT_FALSE(EvaluateInstance(g, 0, 9, {}));  // nobody arrived
}

TEST(Instances, ClassesPutTheMajorityFirstAndBreakTiesByHistory) {
  // Seq 3: ranks 0 and 1 call all_reduce [4,4], rank 2 [1]: two classes,
  // the two-rank one first. Seq 4, one rank each side: the pg ran
  // all_reduce [4,4] before, so that side (rank 1) is the reference.
  JobBuilder b("nccl");
  for (int r = 0; r < 3; ++r) b.Steps(r, "0", 1, 2);
  b.Coll(0, "0", 3, "all_reduce").Coll(1, "0", 3, "all_reduce").Coll(2, "0", 3, "all_reduce", true, {1});
  b.Coll(0, "0", 4, "broadcast", false, {1}).Coll(1, "0", 4, "all_reduce", false);
  model::Job job = b.Members("0", {0, 1, 2}).Build();
  GroupTable g = Groups(job);
  InstanceTable t = BuildInstances(g, {});
  const Instance& three = t.list[t.Find(0, 3)];
  ASSERT_TRUE(three.mismatch);
  EXPECT_EQ(three.classes[0].second, (Ranks{0, 1}));
  EXPECT_EQ(three.classes[1].second, Ranks{2});
  const Instance& four = t.list[t.Find(0, 4)];
  ASSERT_TRUE(four.mismatch);
  EXPECT_EQ(four.classes[0].second, Ranks{1});
  EXPECT_EQ(four.not_reached, Ranks{2});
  EXPECT_FALSE(four.tie);  // history decided
  EXPECT_EQ(t.mismatched_seqs[0], 2);
}

TEST(Instances, ATieIsEqualSidesThatHistoryDoesNotTellApart) {
  JobBuilder b("nccl");
  b.Coll(0, "0", 1, "broadcast", false, {1}).Coll(1, "0", 1, "all_reduce", false);
  model::Job job = b.Members("0", {0, 1}).Build();
  GroupTable g = Groups(job);
  InstanceTable t = BuildInstances(g, {});
  const Instance& one = t.list[t.Find(0, 1)];
  ASSERT_TRUE(one.mismatch);
  EXPECT_TRUE(one.tie);
  EXPECT_EQ(one.classes[0].second, Ranks{1});  // the prior: the side without the lowest rank
}

TEST(Instances, GlooInFlightUnlessRetiredOrAssumedTimedOut) {
  // gloo: pending and not retired is still in flight.
  JobBuilder b;
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 1);
  b.Coll(0, "0", 2, "all_reduce", false);
  model::Job job = b.Build();
  GroupTable g = Groups(job);
  EXPECT_TRUE(EvaluateInstance(g, 0, 2, {})->all_in_flight);
  AnalyzeOptions assume;
  assume.assume_timed_out = true;
  EXPECT_FALSE(EvaluateInstance(g, 0, 2, assume)->all_in_flight);
}

}  // namespace
}  // namespace hangdx::analyze
