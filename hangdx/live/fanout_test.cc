#include "hangdx/live/fanout.h"

#include <gtest/gtest.h>

#include "hangdx/live/testing/endless_worker.h"
#include "hangdx/live/testing/fake_workers.h"

namespace hangdx::live {
namespace {

using std::chrono::milliseconds;

TEST(FanoutTest, AsksEveryWorkerAndKeepsConnections) {
  testing::FakeWorkers fleet({.ranks = 16, .keepalive_max = 3});
  ASSERT_TRUE(fleet.Start().ok());
  HttpFanout fan;
  for (const auto& u : fleet.Urls()) fan.AddEndpoint(*ParseUrl(u));
  std::vector<HttpCall> calls;
  for (size_t i = 0; i < 16; ++i) {
    calls.push_back({i, "POST", "/handler/ping"});
    calls.push_back({i, "GET", "/handler/"});
  }
  for (int round = 0; round < 4; ++round) {  // past keepalive_max: reconnects
    auto replies = fan.Run(calls, milliseconds(5000));
    ASSERT_EQ(replies.size(), calls.size());
    for (size_t i = 0; i < replies.size(); i += 2) {
      EXPECT_EQ(replies[i].status, 200) << replies[i].error;
      EXPECT_EQ(replies[i].body, "pong");
      EXPECT_NE(replies[i + 1].body.find("fr_trace_json"), std::string::npos);
    }
  }
  EXPECT_EQ(fleet.served(), 4u * 32u);
}

TEST(FanoutTest, DeadAndWedgedWorkersFailWithinTheDeadline) {
  testing::FakeWorkers fleet({.ranks = 3});
  ASSERT_TRUE(fleet.Start().ok());
  HttpFanout fan;
  for (const auto& u : fleet.Urls()) fan.AddEndpoint(*ParseUrl(u));
  fleet.Kill(1);
  fleet.Wedge(2);
  std::this_thread::sleep_for(milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  auto replies = fan.Run({{0, "POST", "/handler/ping"}, {1, "POST", "/handler/ping"}, {2, "POST", "/handler/ping"}},
                         milliseconds(300));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[1].status, 0);
  EXPECT_EQ(replies[1].error, "connection refused");
  EXPECT_EQ(replies[2].status, 0);
  EXPECT_NE(replies[2].error.find("no answer within 0.3 s"), std::string::npos) << replies[2].error;
  EXPECT_LT(s, 1.0);
  HttpFanout other;
  other.AddEndpoint({"no-such-host.invalid", 80, ""});
  auto r = other.Run({{0, "GET", "/"}}, milliseconds(2000));
  EXPECT_EQ(r[0].status, 0);
  EXPECT_NE(r[0].error.find("cannot resolve"), std::string::npos);
}

TEST(FanoutTest, AnEndlessBodyIsCutAtTheLimit) {
  testing::EndlessWorker bad;
  ASSERT_TRUE(bad.Start().ok());
  HttpFanout fan({.max_response_bytes = size_t{1} << 20});
  fan.AddEndpoint(*ParseUrl(bad.Url()));
  auto t0 = std::chrono::steady_clock::now();
  auto replies = fan.Run({{0, "POST", "/handler/fr_trace_json"}}, milliseconds(5000));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(replies[0].status, 0);
  EXPECT_EQ(replies[0].error, "bad response: the body is over 1048576 bytes");
  EXPECT_LT(s, 2.0);
  bad.Stop();
  // What the worker wrote before the cut: the limit plus the socket buffers.
  EXPECT_LT(bad.sent(), size_t{16} << 20);
}

TEST(FanoutTest, GiveUpEndsARoundAtOnce) {
  testing::FakeWorkers fleet({.ranks = 2});
  ASSERT_TRUE(fleet.Start().ok());
  HttpFanout fan({.max_in_flight = 1});
  for (const auto& u : fleet.Urls()) fan.AddEndpoint(*ParseUrl(u));
  fleet.Wedge(0);
  fleet.Wedge(1);
  std::this_thread::sleep_for(milliseconds(100));
  auto t0 = std::chrono::steady_clock::now();
  auto end = t0 + milliseconds(300);
  auto replies = fan.Run({{0, "POST", "/handler/ping"}, {1, "POST", "/handler/ping"}}, milliseconds(5000), nullptr,
                         [end] { return std::chrono::steady_clock::now() >= end; });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);  // not 2 x 5 s (one in flight at a time)
  for (const auto& r : replies) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.error, "not answered before the watch ended");
  }
}

TEST(FanoutTest, HandlersAnswerLikeTorch) {
  testing::FakeWorkers fleet({.ranks = 2, .step_seconds = 0.01});
  ASSERT_TRUE(fleet.Start().ok());
  HttpFanout fan;
  for (const auto& u : fleet.Urls()) fan.AddEndpoint(*ParseUrl(u));
  std::this_thread::sleep_for(milliseconds(50));
  auto r = fan.Run({{0, "POST", "/handler/dump_nccl_trace_json?includecollectives=false"},
                    {0, "POST", "/handler/dump_nccl_trace_json?includecollectives=maybe"},
                    {0, "POST", "/handler/nope"},
                    {1, "POST", "/handler/fr_trace_json"}},
                   milliseconds(2000));
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].body.find("\"entries\""), std::string::npos);
  EXPECT_NE(r[0].body.find("\"pg_status\":{\"0\":{\"last_completed_collective\":\""), std::string::npos);
  EXPECT_EQ(r[1].status, 400);
  EXPECT_EQ(r[2].status, 404);
  EXPECT_NE(r[3].body.find("\"entries\":[{\"collective_seq_id\""), std::string::npos);
}

}  // namespace
}  // namespace hangdx::live
