#include "hangdx/ingest/messages/matcher.h"

#include <gtest/gtest.h>

namespace hangdx::ingest::messages {
namespace {

// Two line rows sharing an anchor (the first that matches wins) and a block.
constexpr const char* kCatalogue = R"(message t.status_new
producer c10d
versions 2.2-
source x.cpp@v2.2.0
format failure detected by watchdog at work sequence id: {} PG status: last enqueued work: {}, last completed work: {}
layout line
anchor PG status: last enqueued
pattern failure detected by watchdog at work sequence id: (?P<seq>\d+) PG status: last enqueued work: (?P<enqueued>\d+), last completed work: (?P<completed>\d+)
event status
proves progress
example failure detected by watchdog at work sequence id: 9 PG status: last enqueued work: 9, last completed work: 8
expect seq=9 enqueued=9 completed=8

message t.status_any
producer c10d
versions 2.2-
source x.cpp@v2.2.0
format PG status: last enqueued work: {}
layout line
anchor PG status: last enqueued
pattern PG status: last enqueued work: (?P<enqueued>\d+)
event status
proves progress
example PG status: last enqueued work: 4
expect enqueued=4

message t.detail
producer wrapper
versions 1.10-
source y.cpp@v1.10.0
format SequenceNumber={}
layout line
anchor SequenceNumber=
pattern SequenceNumber=(?P<seq>\d+)
event mismatch
seq_base 0
proves mismatch
example SequenceNumber=2
expect seq=3

message t.block
producer horovod
versions 0.16-
source z.cc@v0.20.0
format Stalled ranks: ...
layout block
anchor Stalled ranks:
pattern ^Stalled ranks:$
continuation ^(?P<ranks>\d+)!?: \[
end Will shutdown\.
event culprit
rank_scope global
proves the listed ranks are missing
example Stalled ranks:
example 3: [t1, t2]
example 5!: [t1]
expect ranks=3,5

message t.items
producer horovod
versions 0.9-0.13.5
source o.cc@v0.13.5
format waiting for more than {} seconds. Stalled ops: {tensor} [ready ranks: {r}, ...], ...
layout line
anchor [ready ranks:
pattern for more than (?P<elapsed_s>\d+) seconds\. Stalled ops: (?P<tensor>[^\s\[]+) \[ready ranks: (?P<ready_ranks>\d+(?:, \d+)*)\]
item (?P<tensor>[^\s\[,]+) \[ready ranks: (?P<ready_ranks>\d+(?:, \d+)*)\]
event stall
rank_scope global
proves the listed ranks are ready
example waiting for more than 60 seconds. Stalled ops: a [ready ranks: 3], b [ready ranks: 2, 0]
expect elapsed_s=60 tensor=a ready_ranks=3
)";

class MatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Catalogue::Parse(kCatalogue, "t.msgs");
    ASSERT_TRUE(c.ok()) << c.status().message();
    catalogue_ = std::move(c).value();
    compiled_ = std::make_unique<CompiledCatalogue>(catalogue_);
    ASSERT_TRUE(compiled_->errors().empty());
  }
  std::vector<MessageMatch> Run(const std::vector<std::string>& lines) {
    MessageMatcher m(*compiled_);
    std::vector<MessageMatch> out;
    int64_t n = 0;
    for (const auto& l : lines) {
      ++n;
      m.Feed(l, n, n * 100, &out);
    }
    m.Finish(&out);
    return out;
  }
  Catalogue catalogue_;
  std::unique_ptr<CompiledCatalogue> compiled_;
};

TEST_F(MatcherTest, FirstMatchingRowWinsAndC10dPrefixIsRead) {
  auto out =
      Run({"[PG ID 2 PG GUID 2(tp) Rank 1] failure detected by watchdog at work sequence id: 9 PG status: "
           "last enqueued work: 9, last completed work: 8",
           "[Rank 3] PG status: last enqueued work: 4"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].row->id, "t.status_new");
  EXPECT_EQ(out[0].fields.completed, 8);
  EXPECT_TRUE(out[0].c10d_prefix.found);
  EXPECT_EQ(out[0].c10d_prefix.pg_id, "2");
  EXPECT_EQ(out[0].c10d_prefix.pg_desc, "tp");
  EXPECT_EQ(out[0].c10d_prefix.pg_rank, 1);
  EXPECT_EQ(out[1].row->id, "t.status_any");
  EXPECT_EQ(out[1].c10d_prefix.pg_rank, 3);
  EXPECT_EQ(out[1].line, 2);
  EXPECT_EQ(out[1].offset, 200);
}

TEST_F(MatcherTest, SeqBaseZeroCountsTheOpItself) {
  auto out = Run({"CollectiveFingerPrint(SequenceNumber=41, OpType=ALLREDUCE)"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].fields.seq, 42);
}

TEST_F(MatcherTest, BlockTakesContinuationLinesUntilEndOrAStranger) {
  auto out = Run({"Stalled ranks:", "1: [a]", "2!: [b]", "One or more rank is stalled. Will shutdown.",
                  "Stalled ranks:", "7: [c]", "an unrelated line", "PG status: last enqueued work: 4"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].row->id, "t.block");
  EXPECT_EQ(out[0].fields.ranks, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(out[1].fields.ranks, (std::vector<int64_t>{7}));
  EXPECT_EQ(out[1].line, 5);
  EXPECT_EQ(out[2].row->id, "t.status_any");  // read after the block closed
}

TEST_F(MatcherTest, CheckRowSaysWhatDiffers) {
  std::string text = kCatalogue;
  text.replace(text.find("expect seq=9 enqueued=9 completed=8"), 35, "expect seq=10 enqueued=9 started=1");
  auto c = Catalogue::Parse(text, "t.msgs");
  ASSERT_TRUE(c.ok());
  CompiledCatalogue compiled(*c);
  auto failures = CheckRow(compiled, c->rows()[0]);
  EXPECT_EQ(failures, (std::vector<std::string>{
                          "t.status_new: example 1: expected seq=10, got seq=9",
                          "t.status_new: example 1: expected started=1, got no started",
                          "t.status_new: example 1: captured completed=8 that expect does not list",
                      }));
  // A test that another row catches first fails, naming that row.
  text = kCatalogue;
  text.replace(text.find("example PG status: last enqueued work: 4"), 40,
               "example failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 1, last "
               "completed work: 0");
  c = Catalogue::Parse(text, "t.msgs");
  ASSERT_TRUE(c.ok());
  CompiledCatalogue compiled2(*c);
  failures = CheckRow(compiled2, c->rows()[1]);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0], "t.status_any: example 1: does not match this row (matched row t.status_new)");
}

TEST_F(MatcherTest, ALineWithoutAnyAnchorCostsOneSetScan) {
  EXPECT_TRUE(Run({"epoch 3 step 100 loss 0.25", ""}).empty());
}

TEST_F(MatcherTest, AnItemPatternGivesOneMessagePerItemOfTheLine) {
  // Horovod's early stall line lists every stalled tensor with its ready
  // ranks: one message each, the row's other captures (the wait) shared.
  auto out =
      Run({"waiting for more than 60 seconds. Stalled ops: a [ready ranks: 3], b [ready ranks: 2, 0], c "
           "[ready ranks: 1]"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].fields.tensor, "a");
  EXPECT_EQ(out[0].fields.ready_ranks, (std::vector<int64_t>{3}));
  EXPECT_EQ(out[1].fields.tensor, "b");
  EXPECT_EQ(out[1].fields.ready_ranks, (std::vector<int64_t>{2, 0}));  // replaced, not appended to a's
  EXPECT_EQ(out[2].fields.tensor, "c");
  for (const auto& m : out) {
    EXPECT_EQ(m.fields.elapsed_ms, 60000);
    EXPECT_EQ(m.line, 1);
  }
  EXPECT_TRUE(CheckRow(*compiled_, catalogue_.rows().back()).empty());
}

TEST_F(MatcherTest, ItemsAreBoundedPerLineAndPerFile) {
  // A hostile log of long item lists: at most 65,536 per matcher (and per
  // line), then one message per line, so the work stays linear in lines;
  // the line that was cut says so.
  std::string line = "waiting for more than 60 seconds. Stalled ops: ";
  for (int i = 0; i < 2000; ++i) line += (i ? ", t" : "t") + std::to_string(i) + " [ready ranks: 1]";
  auto out = Run(std::vector<std::string>(70, line));
  ASSERT_EQ(out.size(), 65536u + 37u);  // 32 whole lines, 1,536 items of the 33rd, then one per line
  EXPECT_EQ(out[65535].line, 33);
  ASSERT_EQ(out[65535].problems.size(), 1u);
  EXPECT_EQ(out[65535].problems[0].rfind("only the first 1536 items of this line were read", 0), 0u);
  EXPECT_TRUE(out[65534].problems.empty());
}

TEST(CatalogueItem, IsForLineRowsOnly) {
  auto c = Catalogue::Parse(R"(message t.bad
producer p
versions 1-
source s@v1
format f
layout block
anchor A
pattern ^A$
continuation ^(?P<ranks>\d+)
item (?P<ranks>\d+)
event culprit
rank_scope global
proves x
example A
expect
)",
                            "bad.msgs");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("item is for layout line"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace hangdx::ingest::messages
