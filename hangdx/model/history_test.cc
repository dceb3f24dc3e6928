#include "hangdx/model/history.h"

#include <gtest/gtest.h>

namespace hangdx::model {
namespace {

// A rank running `steps` steps of {all_reduce on pg "0", two on "1"}, with
// record ids counting every op; the last `pending` collectives unfinished.
std::vector<OpRecord> Steps(Interner& in, int steps, int pending) {
  std::vector<OpRecord> ops;
  int64_t seq0 = 100, seq1 = 7;
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < 3; ++k) {
      OpRecord op;
      op.record_id = static_cast<int64_t>(ops.size()) + 5000;
      op.pg_name = in.Str(k == 0 ? "0" : "1");
      op.pg_desc = in.Str(k == 0 ? "default_pg" : "tp");
      op.profiling_name = in.Str(k == 2 ? "nccl:all_gather" : "nccl:all_reduce");
      ParseProfilingName(&op);
      op.collective_seq = k == 0 ? seq0++ : seq1++;
      op.input_sizes = in.Intern(Shapes{{k == 0 ? 8 : 4}});
      op.completed = true;
      op.time_created_ns = 1000 + static_cast<int64_t>(ops.size());
      ops.push_back(op);
    }
  for (int i = 0; i < pending; ++i) ops[ops.size() - 1 - i].completed = false;
  return ops;
}

TEST(OpHistory, RoundTripsEveryCollective) {
  Interner in;
  std::vector<OpRecord> ops = Steps(in, 500, 2);
  OpRecord p2p;
  p2p.pg_name = in.Str("1");
  p2p.profiling_name = in.Str("nccl:send 0->1");
  ParseProfilingName(&p2p);
  p2p.is_p2p = true;
  ops.insert(ops.begin() + 40, p2p);  // breaks the pattern once
  OpHistory h = OpHistory::Build(ops);
  EXPECT_EQ(h.entries(), ops.size());
  EXPECT_EQ(h.collectives(), ops.size() - 1);
  ASSERT_EQ(h.pgs().size(), 2u);
  EXPECT_EQ(h.pgs()[0].name, "0");
  EXPECT_EQ(h.pgs()[1].desc, "tp");
  EXPECT_EQ(h.pgs()[1].ops, 1001u);
  EXPECT_EQ(h.pgs()[0].first_seq, 100);
  EXPECT_EQ(h.pgs()[0].last_seq, 599);
  EXPECT_EQ(h.pgs()[0].distinct_seqs, 500u);
  EXPECT_EQ(h.variants().size(), 3u);
  EXPECT_EQ(h.last_activity_ns(), 1000 + 1499);
  size_t n = 0;
  bool same = true;
  h.ForEach([&](const HistoryItem& c) {
    const OpRecord& op = ops[c.pos];
    same = same && !op.is_p2p && c.seq == op.collective_seq && c.record_id == op.record_id &&
           c.completed == op.completed && h.pgs()[c.pg].name == op.pg_name && h.variants()[c.variant].op == op.op &&
           h.variants()[c.variant].input_sizes == op.input_sizes;
    ++n;
  });
  EXPECT_TRUE(same);
  EXPECT_EQ(n, h.collectives());
  // One period of 3 items plus the few that break it: far below 1,500 items.
  EXPECT_LT(h.MemoryBytes(), 4096u);
}

TEST(OpHistory, IrregularOpsStillRoundTrip) {
  Interner in;
  std::vector<OpRecord> ops;
  for (int i = 0; i < 300; ++i) {
    OpRecord op;
    op.pg_name = in.Str(std::to_string(i * 7919 % 5));
    op.collective_seq = (i * 104729) % 1000;
    op.record_id = i;
    op.completed = i % 3 == 0;
    ops.push_back(op);
  }
  OpHistory h = OpHistory::Build(ops);
  size_t n = 0;
  bool same = true;
  h.ForEach([&](const HistoryItem& c) {
    same = same && c.pos == n && c.seq == ops[n].collective_seq && c.completed == ops[n].completed &&
           h.pgs()[c.pg].name == ops[n].pg_name;
    ++n;
  });
  EXPECT_TRUE(same);
  EXPECT_EQ(n, 300u);
}

// Past the items the period is chosen from (Builder::kChooseFrom), the
// streamed history still gives every collective back, with memory by what
// is irregular: a size that changes once, a seq gap, a repeated seq, a
// pattern shifted by one op.
TEST(OpHistory, StreamedPastThePeriodChoiceRoundTrips) {
  Interner in;
  std::vector<OpRecord> ops = Steps(in, 20000, 3);  // 60,000 collectives
  ops[30000].input_sizes = in.Intern(Shapes{{16}});
  for (size_t i = 40000; i < ops.size(); ++i)
    if (ops[i].pg_name == "0") ops[i].collective_seq += 1000;  // a gap in pg 0's seqs
  ops[50001].collective_seq = ops[49998].collective_seq;       // a repeat in pg 0
  ops.erase(ops.begin() + 55000);                              // one op fewer: the pattern shifts
  OpHistory::Builder b;
  for (const OpRecord& op : ops) b.Add(op);
  EXPECT_EQ(b.size(), ops.size());
  OpHistory h = std::move(b).Finish();
  EXPECT_EQ(b.size(), 0u);
  size_t n = 0;
  bool same = true;
  h.ForEach([&](const HistoryItem& c) {  // every op is a collective
    const OpRecord& op = ops[n];
    same = same && c.pos == n && c.seq == op.collective_seq && c.record_id == op.record_id &&
           c.completed == op.completed && h.pgs()[c.pg].name == op.pg_name &&
           h.variants()[c.variant].input_sizes == op.input_sizes;
    ++n;
  });
  EXPECT_TRUE(same);
  EXPECT_EQ(n, ops.size());
  EXPECT_EQ(h.pgs()[0].distinct_seqs, 20000u - 1);  // one seq repeated in place of another
  EXPECT_EQ(h.pgs()[0].last_seq, 100 + 20000 - 1 + 1000);
  EXPECT_LT(h.MemoryBytes(), 16384u);
}

// A pass that learns later which collectives completed marks them in a
// copy of the history, per pg, below a seq.
TEST(OpHistory, MarkCompletedBelow) {
  Interner in;
  std::vector<OpRecord> ops = Steps(in, 10, 0);
  for (auto& op : ops) op.completed = false;
  OpHistory h = OpHistory::Build(ops);
  h.MarkCompletedBelow(h.FindPg("0"), 105);
  h.MarkCompletedBelow(h.FindPg("0"), 103);  // never lowered
  size_t done = 0;
  h.ForEach([&](const HistoryItem& c) {
    if (c.completed) {
      EXPECT_EQ(h.pgs()[c.pg].name, "0");
      EXPECT_LT(c.seq, 105);
      EXPECT_TRUE(c.retired);
      ++done;
    }
  });
  EXPECT_EQ(done, 5u);
}

TEST(OpHistory, EmptyAndHistoriesOfAJob) {
  OpHistory h = OpHistory::Build({});
  EXPECT_EQ(h.entries(), 0u);
  EXPECT_EQ(h.FindPg("0"), -1);
  Job job;
  job.dumps.emplace_back();
  auto own = std::make_shared<const OpHistory>();
  job.dumps.emplace_back().history = own;
  auto all = Histories(job);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NE(all[0], nullptr);
  EXPECT_EQ(all[1], own);
}

}  // namespace
}  // namespace hangdx::model
