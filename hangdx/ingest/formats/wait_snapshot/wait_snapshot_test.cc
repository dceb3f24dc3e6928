#include "hangdx/ingest/formats/wait_snapshot/wait_snapshot.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

// ParseWaitSnapshot of `data` (named `file`) into *dumps and *diags.
bool ParseWaitSnapshot(std::string_view data, const std::string& file, std::vector<model::RankDump>* dumps,
                       std::vector<model::Diagnostic>* diags) {
  bool ok = false;
  *dumps = ParseForTest(ingest::ParseWaitSnapshot, data, -1, diags, file, &ok).dumps;
  return ok;
}

TEST(WaitSnapshot, OneWaitPerRankSortedAndUnique) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseWaitSnapshot(R"({"0": {"current_op": "all_reduce", "waiting_for_ranks": [3, 1, 3], "op_seq": 41},
                                    "3": {"current_op": "recv", "waiting_for_ranks": [0], "wait_kind": "any"}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_TRUE(diags.empty());
  EXPECT_EQ(dumps[0].rank, 0);
  EXPECT_EQ(dumps[0].file, "snap.json");
  ASSERT_TRUE(dumps[0].wait);
  EXPECT_EQ(dumps[0].wait->current_op, "all_reduce");
  EXPECT_EQ(dumps[0].wait->waiting_for, (std::vector<model::Rank>{1, 3}));
  EXPECT_EQ(dumps[0].wait->op_seq, 41);
  EXPECT_FALSE(dumps[0].wait->any_of);
  EXPECT_TRUE(dumps[1].wait->any_of);
  EXPECT_FALSE(dumps[1].from_flight_recorder);
}

TEST(WaitSnapshot, HowLongEachRankHasWaited) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseWaitSnapshot(R"({"0": {"current_op": "all_reduce", "waiting_for_ranks": [1], "waited_ms": 42000},
                                    "1": {"current_op": "forward", "waited_ms": 0, "stall_after_ms": 5000},
                                    "2": {"current_op": "x", "waited_ms": -1},
                                    "3": {"current_op": "x", "stall_after_ms": 0}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].wait->waited_ms, 42000);
  EXPECT_EQ(dumps[0].wait->stall_after_ms, -1);
  EXPECT_TRUE(dumps[0].wait->Stalled());  // past the default 30 s
  EXPECT_EQ(dumps[1].wait->stall_after_ms, 5000);
  EXPECT_FALSE(dumps[1].wait->Stalled());
  EXPECT_EQ(diags.size(), 2u);  // a negative wait, a zero threshold
}

TEST(WaitSnapshot, BadMembersAreSkippedWithADiagnostic) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseWaitSnapshot(R"({"0": {"current_op": 7, "waiting_for_ranks": [1]},
                                    "1": {"current_op": "send", "waiting_for_ranks": [-2]},
                                    "2": {"current_op": "barrier", "waiting_for_ranks": []}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].rank, 2);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_NE(diags[0].message.find("rank 0: malformed wait state"), std::string::npos) << diags[0].message;
  EXPECT_EQ(diags[1].rank, 1);
}

TEST(WaitSnapshot, NotASnapshotIsUnusable) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  EXPECT_FALSE(ParseWaitSnapshot(R"({"0": {"current_op": "send")", "cut.json", &dumps, &diags));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("unreadable JSON at byte"), std::string::npos) << diags[0].message;
  EXPECT_GE(diags[0].offset, 0);
  diags.clear();
  EXPECT_FALSE(ParseWaitSnapshot(R"({"entries": []})", "fr.json", &dumps, &diags));
  EXPECT_TRUE(dumps.empty());
  EXPECT_EQ(SniffWaitSnapshot(R"({"5": {"waiting_for_ranks": []}})"), 80);
  EXPECT_EQ(SniffWaitSnapshot(R"(# {"waiting_for_ranks": []})"), 0);
}

// A scalar or array where the snapshot's object or a member's object
// belongs: the fast path once wrote a bare `1` into a member that did not
// exist (found by the fuzz smoke under UBSan); now every such file is
// unusable with a message, or its bad members are skipped.
TEST(WaitSnapshot, ValuesOutsideAMemberAreNotWrittenAnywhere) {
  for (const char* text : {"1", "-3", "\"x\"", "[1, 2]", "null", R"({"0": 5})", R"({"0": [1]})"}) {
    std::vector<model::RankDump> dumps;
    std::vector<model::Diagnostic> diags;
    EXPECT_FALSE(ParseWaitSnapshot(text, "odd.json", &dumps, &diags)) << text;
    EXPECT_TRUE(dumps.empty()) << text;
  }
}

// The fast path gives up on what the DOM path warns about, so both say the
// same: a repeated key, "7" and "07", a rank out of range, a float.
TEST(WaitSnapshot, OddSnapshotsReadAsTheDomPathReadsThem) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseWaitSnapshot(R"({"1": {"current_op": "a", "current_op": "b", "waiting_for_ranks": [0]},
                                    "0": {"current_op": "c", "pg": "x"}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[1].wait->current_op, "b");  // the later value
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("duplicate JSON key"), std::string::npos) << diags[0].message;
  diags.clear();
  ASSERT_TRUE(ParseWaitSnapshot(R"({"7": {"current_op": "a", "waiting_for_ranks": [1]},
                                    "07": {"current_op": "b", "waiting_for_ranks": [2]},
                                    "99999999": {"current_op": "c"}, "1": {"current_op": "d"}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[1].wait->current_op, "b");  // "07" sorts before "7"
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_NE(diags[0].message.find("names rank 7 again"), std::string::npos) << diags[0].message;
  EXPECT_NE(diags[1].message.find("rank 99999999 is out of range"), std::string::npos) << diags[1].message;
  diags.clear();
  ASSERT_TRUE(ParseWaitSnapshot(R"({"2": {"current_op": "a"}, "1": {"current_op": "b"}, "2": {"current_op": "c"}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[1].wait->current_op, "c");  // the later value
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("duplicate JSON key \"2\" at the top level"), std::string::npos) << diags[0].message;
  diags.clear();
  ASSERT_TRUE(ParseWaitSnapshot(R"({"0": {"current_op": "a", "op_seq": 1.5}, "1": {"current_op": "b"}})", "snap.json",
                                &dumps, &diags));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(diags.size(), 1u);
}

// The fast path's scanner reads only plain JSON (no escapes, no floats);
// what it leaves goes through the DOM path, so an escape still reads, and
// JSON errors it meets first are still errors.
TEST(WaitSnapshot, WhatTheFastScannerLeavesIsReadByTheDomPath) {
  std::vector<model::RankDump> dumps;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(ParseWaitSnapshot(R"({"0": {"current_op": "all\u005freduce", "waiting_for_ranks": [1]},
                                    "1": {"current_op": "forward"}})",
                                "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].wait->current_op, "all_reduce");
  EXPECT_TRUE(diags.empty());
  dumps.clear();
  ASSERT_TRUE(
      ParseWaitSnapshot("\n{ \"0\" :\t{ \"current_op\" : \"x\" , \"waiting_for_ranks\" : [ 2 , -0 , 2 ] } }\r\n",
                        "snap.json", &dumps, &diags));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].wait->waiting_for, (std::vector<model::Rank>{0, 2}));
  for (const char* text : {R"({"0": {"current_op": "x", "waiting_for_ranks": [1]}} x)",
                           R"({"0": {"current_op": "x", "waiting_for_ranks": [01]}})",
                           R"({"0": {"current_op": "x", "waiting_for_ranks": [1,]}})",
                           R"({"0": {"current_op": "x", "waiting_for_ranks": [1]},})",
                           R"({"0": {"current_op": "x", "waiting_for_ranks": [1]})",
                           R"({"0": {"current_op": "x", "waiting_for_ranks": [1e0]}})"}) {
    dumps.clear();
    diags.clear();
    EXPECT_FALSE(ParseWaitSnapshot(text, "snap.json", &dumps, &diags)) << text;
    EXPECT_TRUE(dumps.empty()) << text;
    EXPECT_FALSE(diags.empty()) << text;
  }
}

}  // namespace
}  // namespace hangdx::ingest
