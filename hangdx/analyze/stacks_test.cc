#include "hangdx/analyze/stacks.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;

TEST(MergeStacks, EquivalenceClasses) {
  // sglang#27489's shape: TP0 in all_reduce under writing_check, TP1-3 in
  // broadcast under broadcast_pyobj, all under event_loop_overlap.
  JobBuilder b;
  b.Stack(0, {"all_reduce", "writing_check", "event_loop_overlap"});
  for (int r = 1; r < 4; ++r) b.Stack(r, {"broadcast", "broadcast_pyobj", "event_loop_overlap"});
  b.Rank(4);  // data, no stack
  StackTree t = MergeStacks(b.Build());
  EXPECT_EQ(t.root.ranks, (std::vector<model::Rank>{0, 1, 2, 3}));
  ASSERT_EQ(t.root.children.size(), 1u);
  const StackNode& loop = t.root.children[0];
  EXPECT_EQ(loop.frame, "event_loop_overlap");
  ASSERT_EQ(loop.children.size(), 2u);
  EXPECT_EQ(loop.children[0].frame, "broadcast_pyobj");  // the larger class first
  EXPECT_EQ(loop.children[0].ranks, (std::vector<model::Rank>{1, 2, 3}));
  EXPECT_EQ(loop.children[1].frame, "writing_check");
  EXPECT_EQ(loop.children[1].ranks, (std::vector<model::Rank>{0}));
  EXPECT_EQ(t.without_stack, (std::vector<model::Rank>{4}));
}

TEST(MergeStacks, FlightRecorderFramesStandInForAStack) {
  model::Job job;
  model::RankDump d;
  d.rank = 0;
  d.frames = {{"all_reduce", "torch/distributed/distributed_c10d.py", 3245}, {"step", "train.py", 7}};
  model::OpRecord op;
  op.frames = d.interner->Intern(model::Stack{0, 1});
  d.ops.push_back(op);
  job.dumps.push_back(std::move(d));
  StackTree t = MergeStacks(job);
  EXPECT_EQ(t.from_flight_recorder, (std::vector<model::Rank>{0}));
  ASSERT_EQ(t.root.children.size(), 1u);
  EXPECT_EQ(t.root.children[0].frame, "step (train.py:7)");
  EXPECT_EQ(t.root.children[0].children[0].frame, "all_reduce (torch/distributed/distributed_c10d.py:3245)");
}

// A runaway recursion keeps its innermost 1,024 frames under a frame that
// says how many outer ones were cut: ranks 0-1 (1,100 frames) merge, rank 2
// (1,107 frames, the same innermost 1,024) differs beyond the cut and does
// not. Each cut is a warning.
TEST(MergeStacks, DeepStacksAreCutAndSaidSo) {
  std::vector<std::string> deep, deeper;
  for (int i = 0; i < 1107; ++i) (i < 1100 ? deep : deeper).push_back("f" + std::to_string(i));
  deeper.insert(deeper.begin(), deep.begin(), deep.end());
  JobBuilder b;
  b.Stack(0, deep).Stack(1, deep).Stack(2, deeper);
  StackTree t = MergeStacks(b.Build());
  EXPECT_EQ(t.cut, (std::vector<model::Rank>{0, 1, 2}));
  ASSERT_EQ(t.root.children.size(), 2u);
  EXPECT_EQ(t.root.children[0].frame, "[76 outer frames cut]");
  EXPECT_EQ(t.root.children[0].ranks, (std::vector<model::Rank>{0, 1}));
  EXPECT_EQ(t.root.children[1].frame, "[83 outer frames cut]");
  size_t depth = 0;
  for (const StackNode* n = &t.root.children[0]; !n->children.empty(); n = &n->children[0]) ++depth;
  EXPECT_EQ(depth, kMaxStackFrames);
  ASSERT_EQ(t.problems.size(), 3u);
  EXPECT_EQ(t.problems[0].message,
            "rank 0: a stack of 1100 frames, cut to its innermost 1024; it merges only with stacks cut by as many "
            "frames");
  EXPECT_EQ(t.problems[0].file, "pyspy_rank0.txt");
}

}  // namespace
}  // namespace hangdx::analyze
