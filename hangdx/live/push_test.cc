#include "hangdx/live/push.h"

#include <gtest/gtest.h>

#include "hangdx/live/hooks.h"

namespace hangdx::live {
namespace {

TEST(PushTest, ReportsAreCheckedPart) {
  EXPECT_FALSE(ParseReport("", 10).ok());
  EXPECT_FALSE(ParseReport("[1]", 10).ok());
  EXPECT_FALSE(ParseReport(R"({"hangdx_report": 1})", 10).ok());
  EXPECT_FALSE(ParseReport(R"({"hangdx_report": 1, "rank": 99999999})", 10).ok());
  EXPECT_FALSE(ParseReport(R"({"hangdx_report": 1, "rank": 1, "stacks": 7})", 10).ok());
  EXPECT_FALSE(ParseReport(R"({"hangdx_report": 1, "rank": 1, "wait": {"op_seq": "x"}})", 10).ok());
  EXPECT_FALSE(
      ParseReport(R"({"hangdx_report": 1, "rank": 1, "fr": {"entries": [{"record_id": 1}, {"record_id": 2}]}})", 1)
          .ok());
  EXPECT_FALSE(ParseReport(R"({"0": {"current_op": 5}})", 10).ok());
  EXPECT_FALSE(ParseReport(R"({"zero": {"current_op": "x"}})", 10).ok());
  auto heartbeat = ParseReport(R"({"hangdx_report": 1, "rank": 4, "pid": 9, "seq": 0})", 10);
  ASSERT_TRUE(heartbeat.ok());
  EXPECT_EQ((*heartbeat)[0].rank, 4);
  auto snap = ParseReport(R"({"0": {"current_op": "all_reduce", "waiting_for_ranks": [2], "op_seq": 41},
                              "2": {"current_op": "checkpoint", "waiting_for_ranks": [], "op_seq": 40}})",
                          10);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->size(), 2u);
}

TEST(PushTest, BoardAddsDeltasUpAndRebuildsTheDump) {
  PushBoard b(3);
  auto r1 = ParseReport(R"({"hangdx_report": 1, "rank": 0, "pid": 5, "seq": 1, "fr": {"version": "2.10",
      "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1]"}},
      "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": "-1",
                          "last_completed_collective": "2"}},
      "entries": [{"record_id": 0, "collective_seq_id": 1}, {"record_id": 1, "collective_seq_id": 2}]}})",
                        10);
  ASSERT_TRUE(r1.ok());
  EXPECT_TRUE(b.Apply((*r1)[0]));
  EXPECT_FALSE(b.Apply((*r1)[0]));  // the same pid and seq: a resend
  auto r2 = ParseReport(R"({"hangdx_report": 1, "rank": 0, "pid": 5, "seq": 2, "fr": {
      "pg_status": {"0": {"last_enqueued_collective": "4", "last_completed_collective": "3"}},
      "entries": [{"record_id": 2}, {"record_id": 3}]}})",
                        10);
  ASSERT_TRUE(b.Apply((*r2)[0]));
  EXPECT_EQ(b.entries(0), 3u);  // the ring keeps the last 3
  auto p = b.ProgressOf(0);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], (PgProgress{"0", 4, -1, 3}));
  EXPECT_EQ(b.MembersOf(0).at(""), (std::vector<Rank>{0, 1}));
  std::string fr = b.FrJson(0);
  EXPECT_EQ(fr.find(R"("record_id":0)"), std::string::npos) << fr;  // fell off the ring
  EXPECT_NE(fr.find(R"("entries":[{"collective_seq_id":2,"record_id":1},{"record_id":2})"), std::string::npos) << fr;
  EXPECT_NE(fr.find(R"("version":"2.10")"), std::string::npos);
  EXPECT_EQ(b.FrJson(7), "");
  b.WantStacks({0});
  EXPECT_TRUE(b.Wants(0));
  auto r3 = ParseReport(R"({"hangdx_report": 1, "rank": 0, "pid": 5, "seq": 3, "stacks": "Thread 0x1"})", 10);
  b.Apply((*r3)[0]);
  EXPECT_FALSE(b.Wants(0));
  EXPECT_EQ(b.Stacks(0), "Thread 0x1");
  auto w = ParseReport(R"({"3": {"current_op": "all_reduce", "waiting_for_ranks": [1], "op_seq": 8}})", 10);
  b.Apply((*w)[0]);
  EXPECT_EQ(b.ProgressOf(3)[0], (PgProgress{"wait:", 8, -1, 7}));
  EXPECT_NE(b.WaitSnapshot().find("\"3\""), std::string::npos);
}

TEST(PushTest, CountersStandInOnlyWhenTheyAreCollectiveSeqs) {
  PushBoard b;
  auto apply = [&](const std::string& body) {
    auto r = ParseReport(body, 10);
    ASSERT_TRUE(r.ok()) << r.status().message();
    b.Apply((*r)[0]);
  };
  // Rank 0: its last entry is collective seq 4 of pg 0, its counter 4.
  apply(R"({"hangdx_report": 1, "rank": 0, "fr": {"pg_status": {"0": {"last_enqueued_collective": "4",
      "last_completed_collective": "3"}}, "entries": [{"record_id": 3, "pg_id": 0, "collective_seq_id": 4,
      "is_p2p": false}]}})");
  EXPECT_TRUE(b.CountsCollectives(0));
  // Rank 1: the counter counts more ops than its collectives (gloo's op ids).
  apply(R"({"hangdx_report": 1, "rank": 1, "fr": {"pg_status": {"0": {"last_enqueued_collective": "6",
      "last_completed_collective": "5"}}, "entries": [{"record_id": 5, "pg_id": 0, "collective_seq_id": 4}]}})");
  EXPECT_FALSE(b.CountsCollectives(1));
  // Rank 2: a P2P op once, so its counters may count them; no entries at all.
  apply(R"({"hangdx_report": 1, "rank": 2, "pid": 1, "seq": 1, "fr": {"pg_status": {"0": {
      "last_enqueued_collective": "2", "last_completed_collective": "2"}}, "entries": [{"record_id": 0,
      "pg_id": 0, "collective_seq_id": 0, "is_p2p": true}, {"record_id": 1, "pg_id": 0, "collective_seq_id": 2}]}})");
  EXPECT_FALSE(b.CountsCollectives(2));
  apply(R"({"hangdx_report": 1, "rank": 3, "fr": {"pg_status": {"0": {"last_enqueued_collective": "2"}}}})");
  EXPECT_FALSE(b.CountsCollectives(3));
  EXPECT_FALSE(b.CountsCollectives(9));
}

TEST(HooksTest, AlertmanagerShape) {
  nlohmann::ordered_json record = {{"fingerprint", "missing_rank pg 0 seq 4 culprits 3"},
                                   {"found_at", "2025-01-01T00:00:00Z"},
                                   {"bundle", "/tmp/b"},
                                   {"finding",
                                    {{"kind", "missing_rank"},
                                     {"severity", "error"},
                                     {"summary", "s"},
                                     {"pg", {{"name", "0"}}},
                                     {"culprit_ranks", {3, 5}},
                                     {"fix_hint", "h"}}}};
  auto p = AlertmanagerPayload(record, "train");
  EXPECT_EQ(p["version"], "4");
  EXPECT_EQ(p["status"], "firing");
  const auto& a = p["alerts"][0];
  EXPECT_EQ(a["labels"]["alertname"], "HangdxHang");
  EXPECT_EQ(a["labels"]["kind"], "missing_rank");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_EQ(a["annotations"]["culprit_ranks"], "3,5");
  EXPECT_EQ(a["startsAt"], "2025-01-01T00:00:00Z");
  EXPECT_EQ(a["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_EQ(AlertmanagerPayload(record, "train")["alerts"][0]["fingerprint"], a["fingerprint"]);
}

TEST(HooksTest, CommandTimeoutAndExitCode) {
  nlohmann::ordered_json record = {{"finding", {{"kind", "x"}}}};
  auto rc = RunHookCommand("exit 3", record, std::chrono::milliseconds(5000));
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(*rc, 3);
  auto slow = RunHookCommand("sleep 30", record, std::chrono::milliseconds(200));
  EXPECT_FALSE(slow.ok());
  auto env = RunHookCommand("test \"$HANGDX_KIND\" = x", record, std::chrono::milliseconds(5000));
  EXPECT_EQ(*env, 0);
}

}  // namespace
}  // namespace hangdx::live
