// The watch loop against fake torch workers on loopback (testing/
// fake_workers.h), driven into each kind of hang, and its service as a
// plain function. Intervals are short (100 ms probes, 600 ms stall) so
// that each case takes about a second.
#include "hangdx/live/watcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hangdx/live/testing/endless_worker.h"
#include "hangdx/live/testing/fake_workers.h"
#include "hangdx/pipeline/pipeline.h"

namespace hangdx::live {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

// A Flight Recorder entry of the default pg's all_reduce `seq`, as the
// push hook sends it (torch's _dump_fr_trace_json).
json PushedEntry(int seq, bool retired, const std::string& state) {
  return json{{"record_id", seq - 1},
              {"pg_id", 0},
              {"process_group", {"0", "default_pg"}},
              {"collective_seq_id", seq},
              {"p2p_seq_id", 0},
              {"op_id", seq},
              {"profiling_name", "gloo:all_reduce"},
              {"time_created_ns", 1700000000000000000 + seq},
              {"input_sizes", {{4}}},
              {"input_dtypes", {"Float"}},
              {"output_sizes", {{4}}},
              {"output_dtypes", {"Float"}},
              {"state", state},
              {"retired", retired},
              {"timeout_ms", 600000},
              {"is_p2p", false},
              {"thread_id", "1"},
              {"thread_name", "main"}};
}

// A pushed report of `rank` (docs/live.md, section 6): report number
// `seq`, the default pg's counters, `entries`, and the pg's member list
// `members` ("[0, 1]").
json PushedReport(int rank, int seq, int enq, int comp, json entries, const std::string& members) {
  json fr = {{"version", "2.10"},
             {"pg_config", {{"", {{"name", ""}, {"desc", ""}, {"ranks", members}}}}},
             {"pg_status",
              {{"0",
                {{"last_enqueued_collective", std::to_string(enq)},
                 {"last_started_collective", "-1"},
                 {"last_completed_collective", std::to_string(comp)}}}}},
             {"entries", std::move(entries)}};
  return json{{"hangdx_report", 1}, {"rank", rank}, {"pid", 100 + rank}, {"seq", seq}, {"fr", fr}};
}

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("hangdx_watch_test_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  // The watch of `fleet`'s workers (none: a watch of pushed reports only).
  WatchOptions Options(const testing::FakeWorkers* fleet) {
    WatchOptions o;
    auto urls = fleet ? fleet->Urls() : std::vector<std::string>{};
    for (size_t r = 0; r < urls.size(); ++r) o.workers[static_cast<Rank>(r)] = urls[r];
    o.interval = 100ms;
    o.stall_after = 600ms;
    o.fetch_timeout = 400ms;
    o.duration = 4000ms;
    o.out_dir = dir.string();
    o.format = "json";
    o.exit_on_finding = true;
    o.out = &out;
    o.log = &log;
    return o;
  }

  // Runs the watch; `fault` is called once the job has run a while. Returns
  // the exit code and the seconds from the fault to the end of the watch.
  std::pair<int, double> Watch(WatchOptions o, const std::function<void()>& fault) {
    Watcher w(o);
    Status st = w.Start();
    EXPECT_TRUE(st.ok()) << st.message();
    auto fut = std::async(std::launch::async, [&] { return w.Run(); });
    std::this_thread::sleep_for(400ms);
    auto t0 = std::chrono::steady_clock::now();
    if (fault) fault();
    int rc = fut.get();
    return {rc, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  }

  json Document() { return json::parse(out.str()); }

  // `ranks` ranks push reports; all finish seq 1, all but `hung` enter seq
  // 2 and `hung` never does, then everyone heartbeats. Asked for their
  // stacks, the pushers hold them back until the finding is out: a watch
  // that waits for the stacks (or any next report) before it reports
  // cannot report at all, however fast the machine. Returns the watch's
  // exit code; the first report is in `out`.
  int PushedHangWithStacksHeldBack(int ranks, int hung) {
    WatchOptions o = Options(nullptr);
    o.listen = "127.0.0.1:0";
    o.fetch_timeout = 120000ms;  // the stacks are waited for this long (the second step)
    o.duration = 150000ms;
    Watcher w(o);
    EXPECT_TRUE(w.Start().ok()) << log.str();
    auto post = [&](const json& body) {
      HttpRequest r;
      r.method = "POST";
      r.path = "/v1/report";
      r.body = body.dump();
      return w.Handle(r);
    };
    std::string members = "[";
    for (int r = 0; r < ranks; ++r) members += (r ? ", " : "") + std::to_string(r);
    members += "]";
    auto report = [&](int rank, int seq, int enq, int comp, json entries) {
      return PushedReport(rank, seq, enq, comp, std::move(entries), members);
    };
    auto entry = [](int seq, bool retired) { return PushedEntry(seq, retired, retired ? "completed" : "scheduled"); };
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(post(report(r, 1, 1, 1, {entry(1, true)})).status, 200);
    for (int r = 0; r < ranks; ++r) {
      if (r == hung) continue;
      EXPECT_EQ(post(report(r, 2, 2, 1, {entry(1, true), entry(2, false)})).status, 200);
    }
    std::atomic<bool> stop{false}, release{false};
    std::atomic<int> asked{0};
    std::thread pusher([&] {
      std::vector<bool> want(static_cast<size_t>(ranks), false);
      for (int seq = 3; !stop; ++seq) {
        for (int r = 0; r < ranks; ++r) {
          json beat = r == hung ? report(r, seq, 1, 1, json::array()) : report(r, seq, 2, 1, json::array());
          if (want[static_cast<size_t>(r)] && release) {
            beat["stacks"] = "Thread 0x0000000000000001 (most recent call first):\n  File \"train.py\", line 9\n";
            want[static_cast<size_t>(r)] = false;
          }
          HttpResponse a = post(beat);
          if (a.body.find("stacks") != std::string::npos && !want[static_cast<size_t>(r)]) {
            want[static_cast<size_t>(r)] = true;
            ++asked;
          }
        }
        std::this_thread::sleep_for(50ms);
      }
    });
    auto fut = std::async(std::launch::async, [&] { return w.Run(); });
    // The finding is out while every stack is still held back.
    HttpRequest get;
    get.method = "GET";
    get.path = "/findings";
    bool found = false;
    for (auto until = std::chrono::steady_clock::now() + 60s; !found && std::chrono::steady_clock::now() < until;) {
      found = !json::parse(w.Handle(get).body)["findings"].empty();
      if (!found) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(found) << "no finding while the pushing ranks held their stacks back";
    release = true;
    if (!found) w.Stop();
    int rc = fut.get();
    stop = true;
    pusher.join();
    EXPECT_EQ(asked.load(), ranks);  // then every rank was asked for its stacks, once
    return rc;
  }

  std::string Bundle() {
    std::string bundle;
    for (const auto& e : fs::directory_iterator(dir)) bundle = e.path().string();
    return bundle;
  }

  fs::path dir;
  std::ostringstream out, log;
};

TEST_F(WatcherTest, RankThatStopsArrivingIsNamedWithinStallAfter) {
  testing::FakeWorkers fleet({.ranks = 8, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  auto [rc, seconds] = Watch(Options(&fleet), [&] { fleet.Hang(5); });
  ASSERT_EQ(rc, 1) << log.str();
  json d = Document();
  EXPECT_TRUE(d["hang"].get<bool>());
  EXPECT_EQ(d["findings"][0]["kind"], "missing_rank");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({5}));
  // stall_after + two intervals + slack for a loaded machine.
  EXPECT_LT(seconds, 0.6 + 0.2 + 1.5) << log.str();
  // The bundle gives the same finding to `hangdx analyze`.
  std::string bundle;
  for (const auto& e : fs::directory_iterator(dir)) bundle = e.path().string();
  ASSERT_FALSE(bundle.empty());
  EXPECT_TRUE(fs::exists(fs::path(bundle) / "fr" / "rank_5.json"));
  EXPECT_TRUE(fs::exists(fs::path(bundle) / "stacks" / "rank_5.txt"));
  EXPECT_TRUE(fs::exists(fs::path(bundle) / ".watch" / "probes.jsonl"));
  EXPECT_TRUE(fs::exists(fs::path(bundle) / "wait_state.json"));  // the time evidence
  auto again = pipeline::Diagnose({bundle}, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(analyze::KindName(again->findings[0].kind), std::string("missing_rank"));
  EXPECT_EQ(again->findings[0].culprit_ranks, std::vector<Rank>{5});
}

TEST_F(WatcherTest, KilledRankIsEvidenceNotAnError) {
  testing::FakeWorkers fleet({.ranks = 4, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  auto [rc, seconds] = Watch(Options(&fleet), [&] { fleet.Kill(2); });
  ASSERT_EQ(rc, 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["kind"], "crashed_rank");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({2}));
  EXPECT_EQ(d["ranks_without_dump"], json::array({2}));
  EXPECT_LT(seconds, 2.5) << log.str();
}

TEST_F(WatcherTest, WedgedRankTimesOutAndIsNamed) {
  testing::FakeWorkers fleet({.ranks = 4, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  auto [rc, seconds] = Watch(Options(&fleet), [&] { fleet.Wedge(1); });
  ASSERT_EQ(rc, 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({1}));
  std::string bundle;
  for (const auto& e : fs::directory_iterator(dir)) bundle = e.path().string();
  std::ifstream f(fs::path(bundle) / ".watch" / "stall.json");
  json stall = json::parse(f);
  EXPECT_NE(stall["unanswered"]["1"].get<std::string>().find("no answer within 0.4 s"), std::string::npos);
}

TEST_F(WatcherTest, MismatchIsNamed) {
  testing::FakeWorkers fleet({.ranks = 4, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  auto [rc, seconds] = Watch(Options(&fleet), [&] { fleet.Mismatch(3); });
  ASSERT_EQ(rc, 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["kind"], "collective_mismatch");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({3}));
}

TEST_F(WatcherTest, SlowButProgressingAndHealthyGiveNoFinding) {
  testing::FakeWorkers fleet({.ranks = 4, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  WatchOptions o = Options(&fleet);
  o.duration = 2000ms;
  // Rank 1 takes 0.4 s a step: the job crawls, every member waits, but a
  // seq completes more often than every stall_after.
  auto [rc, seconds] = Watch(o, [&] { fleet.Slow(1, 0.4); });
  EXPECT_EQ(rc, 0) << out.str() << log.str();
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(log.str().find("stall:"), std::string::npos) << log.str();
}

TEST_F(WatcherTest, PushedReportsAreCheckedCountedAndAnalysed) {
  // The service is exercised as a plain function (Handle); it listens too.
  WatchOptions o = Options(nullptr);
  o.token = "s3cret";
  o.fetch_timeout = 300ms;
  o.duration = 3000ms;
  o.max_report_bytes = 1 << 16;
  o.listen = "127.0.0.1:0";
  Watcher w(o);
  ASSERT_TRUE(w.Start().ok()) << log.str();
  auto post = [&](const std::string& body, const std::string& token = "s3cret") {
    HttpRequest r;
    r.method = "POST";
    r.path = "/v1/report";
    r.headers = {{"Authorization", "Bearer " + token}};
    r.body = body;
    return w.Handle(r);
  };
  EXPECT_EQ(post("{}", "wrong").status, 401);
  EXPECT_EQ(post("{not json").status, 400);
  EXPECT_EQ(post(R"({"hangdx_report": 1, "rank": -4})").status, 400);
  EXPECT_EQ(post(R"({"hangdx_report": 1, "rank": 1, "fr": {"entries": [{"no_record_id": 1}]}})").status, 400);
  EXPECT_EQ(post(std::string(70000, ' ')).status, 413);
  // Ranks 0 and 1 finish seq 1; rank 0 enters seq 2 and rank 1 never does.
  auto entry = [](int /*rank*/, int seq, bool retired) { return PushedEntry(seq, retired, "scheduled"); };
  auto report = [&](int rank, int seq, int enq, int comp, std::vector<json> entries) {
    return PushedReport(rank, seq, enq, comp, json(std::move(entries)), "[0, 1]").dump();
  };
  EXPECT_EQ(post(report(0, 1, 1, 1, {entry(0, 1, true)})).status, 200);
  EXPECT_EQ(post(report(1, 1, 1, 1, {entry(1, 1, true)})).status, 200);
  auto again = post(report(1, 1, 1, 1, {entry(1, 1, true)}));
  EXPECT_EQ(again.status, 200);
  EXPECT_NE(again.body.find("\"duplicate\": true"), std::string::npos) << again.body;
  EXPECT_EQ(post(report(0, 2, 2, 1, {entry(0, 2, false)})).status, 200);
  // Both keep pushing heartbeats (pg_status only), nothing moves.
  std::atomic<bool> stop{false};
  std::atomic<int> asked{0};
  std::thread pusher([&] {
    for (int seq = 3; !stop; ++seq) {
      auto a = post(report(0, seq, 2, 1, {}));
      auto b = post(report(1, seq, 1, 1, {}));
      for (auto* resp : {&a, &b}) {
        if (resp->body.find("stacks") == std::string::npos) continue;
        ++asked;
        int rank = resp == &a ? 0 : 1;
        json j = {
            {"hangdx_report", 1},
            {"rank", rank},
            {"pid", 100 + rank},
            {"seq", 100000 + seq * 2 + rank},
            {"stacks", "Thread 0x0000000000000001 (most recent call first):\n  File \"train.py\", line 9 in step\n"}};
        post(j.dump());
      }
      std::this_thread::sleep_for(50ms);
    }
  });
  int rc = w.Run();
  stop = true;
  pusher.join();
  ASSERT_EQ(rc, 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["kind"], "missing_rank");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({1}));
  EXPECT_EQ(asked.load(), 2);
  // Observability: metrics without rank labels, status, findings.
  HttpRequest get;
  get.method = "GET";
  get.headers = {{"Authorization", "Bearer s3cret"}};
  get.path = "/metrics";
  std::string metrics = w.Handle(get).body;
  EXPECT_NE(metrics.find("hangdx_reports_rejected_total{reason=\"unauthorized\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hangdx_findings_total{kind=\"missing_rank\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("hangdx_poll_duration_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  EXPECT_EQ(metrics.find("rank=\""), std::string::npos);
  get.path = "/status";
  json status = json::parse(w.Handle(get).body);
  EXPECT_EQ(status["ranks"], 2);
  EXPECT_EQ(status["pgs"][0]["stalled"], true);
  get.path = "/findings";
  json findings = json::parse(w.Handle(get).body);
  ASSERT_EQ(findings["findings"].size(), 1u);
  EXPECT_EQ(findings["findings"][0]["finding"]["kind"], "missing_rank");
  get.path = "/nope";
  HttpResponse none = w.Handle(get);
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(json::parse(none.body)["endpoints"],
            json::array({"POST /v1/report", "GET /findings", "GET /status", "GET /metrics", "GET /healthz"}));
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// Two ranks pushing world sizes 4 and 8 (two jobs on one watch): the
// largest is used, /status says where it came from and lists both, and the
// log names the disagreement once, however often it is repeated. The
// watch is destroyed without Run: its server stopped right after its start
// (httplib ignored that stop, and the join waited for ever).
TEST_F(WatcherTest, PushedWorldSizesThatDisagreeAreSaid) {
  WatchOptions o = Options(nullptr);
  o.listen = "127.0.0.1:0";
  Watcher w(o);
  ASSERT_TRUE(w.Start().ok()) << log.str();
  auto request = [&](const std::string& method, const std::string& path, const std::string& body) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    return w.Handle(r);
  };
  auto status = [&] { return json::parse(request("GET", "/status", "").body); };
  EXPECT_EQ(status()["world_size_from"], "unknown");
  int seq = 0;
  for (int round = 0; round < 3; ++round)
    for (auto [rank, world] : {std::pair{0, 4}, std::pair{1, 8}}) {
      json beat = {{"hangdx_report", 1}, {"rank", rank}, {"pid", 7}, {"seq", ++seq}, {"world_size", world}};
      ASSERT_EQ(request("POST", "/v1/report", beat.dump()).status, 200);
    }
  json s = status();
  EXPECT_EQ(s["world_size"], 8);
  EXPECT_EQ(s["world_size_from"], "reports");
  EXPECT_EQ(s["world_sizes_pushed"], json::array({4, 8}));
  EXPECT_EQ(Occurrences(log.str(), "rank 1 reports a world of 8 ranks, other ranks 4: two jobs pushing to one "
                                   "watch? The largest, 8, is used"),
            1u)
      << log.str();
}


// Pushed reports take the first look: the finding comes from the Flight
// Recorder the ranks pushed, then their stacks complete the bundle, which
// `hangdx analyze BUNDLE` reads back to the same finding.
TEST_F(WatcherTest, APushedStallIsReportedBeforeTheStacksCome) {
  ASSERT_EQ(PushedHangWithStacksHeldBack(3, 1), 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["kind"], "missing_rank");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({1})) << log.str();
  std::string bundle = Bundle();
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(fs::exists(fs::path(bundle) / "stacks" / ("rank_" + std::to_string(r) + ".txt")));
  EXPECT_TRUE(fs::exists(fs::path(bundle) / ".watch" / "first_report.json"));
  EXPECT_NE(log.str().find("the same finding (missing_rank pg 0 seq"), std::string::npos) << log.str();
  EXPECT_EQ(Occurrences(log.str(), "FINDING"), 1u) << log.str();
  auto again = pipeline::Diagnose({bundle}, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(analyze::KindName(again->findings[0].kind), std::string("missing_rank"));
  EXPECT_EQ(again->findings[0].culprit_ranks, std::vector<Rank>{1});
}

// A large pushed stall: the first look's few ranks from the board, the
// others by their counters (their entries agree with them).
TEST_F(WatcherTest, ALargePushedStallIsReportedFromAFirstLook) {
  ASSERT_EQ(PushedHangWithStacksHeldBack(100, 37), 1) << log.str();
  json d = Document();
  EXPECT_EQ(d["findings"][0]["kind"], "missing_rank");
  EXPECT_EQ(d["findings"][0]["culprit_ranks"], json::array({37})) << log.str();
  EXPECT_NE(log.str().find("fetching details from 5 of its 100 ranks first"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("the same finding (missing_rank pg 0 seq"), std::string::npos) << log.str();
  std::string bundle = Bundle();
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(fs::path(bundle) / "fr")) ++files;
  EXPECT_EQ(files, 100u);
  std::ifstream w(fs::path(bundle) / "wait_state.json");
  std::string waits((std::istreambuf_iterator<char>(w)), std::istreambuf_iterator<char>());
  EXPECT_EQ(waits.find("progress"), std::string::npos);  // the whole evidence now
  auto again = pipeline::Diagnose({bundle}, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->findings[0].culprit_ranks, std::vector<Rank>{37});
}

TEST_F(WatcherTest, AWorkerThatNeverAnswersIsNamedAndTheJobWasNeverSeen) {
  WatchOptions o = Options(nullptr);
  o.workers[0] = "http://127.0.0.1:1";  // nothing listens on port 1
  o.duration = 1000ms;
  Watcher w(o);
  ASSERT_TRUE(w.Start().ok());
  EXPECT_EQ(w.Run(), 2) << log.str();
  EXPECT_EQ(Occurrences(log.str(), "rank 0 (http://127.0.0.1:1) does not answer: connection refused"), 1u) << log.str();
  EXPECT_NE(log.str().find("the job was never seen in 1."), std::string::npos) << log.str();
}

TEST_F(WatcherTest, AnEndlessAnswerIsCutAndTheWorkerSaidUnusableOnce) {
  testing::EndlessWorker bad;
  ASSERT_TRUE(bad.Start().ok());
  WatchOptions o = Options(nullptr);
  o.workers[0] = bad.Url();
  o.max_answer_bytes = size_t{1} << 20;
  o.fetch_timeout = 2000ms;
  o.duration = 1500ms;
  Watcher w(o);
  ASSERT_TRUE(w.Start().ok());
  EXPECT_EQ(w.Run(), 2) << log.str();
  bad.Stop();
  EXPECT_EQ(Occurrences(log.str(), "rank 0 (" + bad.Url() +
                                       ") gives unusable answers: the body is over 1048576 bytes (--max-answer-bytes)"),
            1u)
      << log.str();
  ASSERT_GT(bad.connections(), 1);  // probed again each interval
  EXPECT_LT(bad.sent() / static_cast<size_t>(bad.connections()), size_t{16} << 20);
}

TEST_F(WatcherTest, DurationEndsARoundOfWorkersThatDoNotAnswer) {
  testing::FakeWorkers fleet({.ranks = 4});
  ASSERT_TRUE(fleet.Start().ok());
  for (int r = 0; r < 4; ++r) fleet.Wedge(r);
  WatchOptions o = Options(&fleet);
  o.fetch_timeout = 5000ms;
  o.duration = 800ms;
  Watcher w(o);
  ASSERT_TRUE(w.Start().ok());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(w.Run(), 2) << log.str();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
  EXPECT_NE(log.str().find("none of its 4 workers answered usably"), std::string::npos) << log.str();
}

TEST_F(WatcherTest, HookCommandGetsTheRecord) {
  testing::FakeWorkers fleet({.ranks = 4, .step_seconds = 0.02});
  ASSERT_TRUE(fleet.Start().ok());
  WatchOptions o = Options(&fleet);
  fs::create_directories(dir);
  std::string marker = (dir / "hook.txt").string();
  o.hook_command = "echo \"$HANGDX_KIND $HANGDX_CULPRITS\" > " + marker + "; cat >> " + marker;
  o.exit_on_finding = false;
  o.duration = 2500ms;
  {
    auto [rc, seconds] = Watch(o, [&] { fleet.Hang(0); });
    EXPECT_EQ(rc, 0);
  }  // the watcher's destructor waits for its hooks
  std::ifstream f(marker);
  std::string first;
  std::getline(f, first);
  EXPECT_EQ(first, "missing_rank 0");
  std::string record((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  json j = json::parse(record);
  EXPECT_EQ(j["finding"]["kind"], "missing_rank");
  EXPECT_FALSE(j["bundle"].get<std::string>().empty());
  // Reported once: the stall went on, the finding was not repeated.
  EXPECT_EQ(Occurrences(log.str(), "FINDING"), 1u) << log.str();
}

}  // namespace
}  // namespace hangdx::live
