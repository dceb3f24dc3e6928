// Both state stores, the same contract. The Redis one runs against a real
// redis-server started here on a free loopback port (skipped when
// redis-server is not installed; Debian: redis-server).
#include "hangdx/live/state_store.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "hangdx/live/redis_store.h"

namespace hangdx::live {
namespace {

using namespace std::chrono_literals;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// A redis-server of our own, on loopback, nothing written to disk.
class RedisServer {
 public:
  RedisServer() {
    if (::access("/usr/bin/redis-server", X_OK) != 0) return;
    port_ = FreePort();
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string port = std::to_string(port_);
      ::execl("/usr/bin/redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--loglevel", "warning", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 100; ++i) {  // until it accepts connections
      if (NewRedisStore(Url(), {}).ok()) return;
      std::this_thread::sleep_for(50ms);
    }
  }
  ~RedisServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0; }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

void CheckContract(StateStore* s) {
  RankRecord a{3, "http://n3:1", "0=12/11", 1000, 900, "node0"};
  RankRecord b{1, "", "0=5/5,1=2/2", 1001, 800, ""};
  ASSERT_TRUE(s->PutRanks({a, b}).ok());
  a.progress = "0=13/12";
  ASSERT_TRUE(s->PutRanks({a}).ok());
  auto ranks = s->LoadRanks();
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].rank, 1);
  EXPECT_EQ((*ranks)[0].progress, "0=5/5,1=2/2");
  EXPECT_EQ((*ranks)[1].progress, "0=13/12");
  EXPECT_EQ((*ranks)[1].url, "http://n3:1");
  EXPECT_EQ((*ranks)[1].agent, "node0");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->AppendReport(2, "r" + std::to_string(i), std::nullopt).ok());
  ASSERT_TRUE(s->AppendReport(0, "x", std::nullopt).ok());
  auto reports = s->LoadReports();
  ASSERT_TRUE(reports.ok());
  ASSERT_EQ(reports->size(), 4u);  // rank 2 keeps its last 3
  EXPECT_EQ((*reports)[0], (std::pair<Rank, std::string>{0, "x"}));
  EXPECT_EQ((*reports)[1].second, "r2");
  EXPECT_EQ((*reports)[3].second, "r4");
  EXPECT_TRUE(*s->AddFinding("missing_rank pg 0 seq 4 culprits 3", "{\"n\": 1}"));
  EXPECT_FALSE(*s->AddFinding("missing_rank pg 0 seq 4 culprits 3", "{\"n\": 2}"));
  EXPECT_TRUE(*s->AddFinding("crashed_rank pg 0 seq 9 culprits 1", "{\"n\": 3}"));
  EXPECT_EQ(*s->LoadFindings(), (std::vector<std::string>{"{\"n\": 1}", "{\"n\": 3}"}));
  EXPECT_TRUE(*s->MarkStall("pg 0 at 3/4"));
  EXPECT_FALSE(*s->MarkStall("pg 0 at 3/4"));
  EXPECT_EQ(*s->LoadStalls(), std::vector<std::string>{"pg 0 at 3/4"});
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(s->AppendHistory("h" + std::to_string(i)).ok());
  EXPECT_EQ(*s->LoadHistory(), (std::vector<std::string>{"h2", "h3", "h4", "h5", "h6"}));
}

StoreOptions Small() {
  StoreOptions o;
  o.history_max = 5;
  o.reports_per_rank = 3;
  return o;
}

TEST(StateStoreTest, Memory) {
  auto s = NewMemoryStore(Small());
  CheckContract(s.get());
}

TEST(StateStoreTest, RedisKeepsItAcrossConnections) {
  RedisServer redis;
  if (!redis.running()) GTEST_SKIP() << "redis-server not installed";
  {
    auto s = NewRedisStore(redis.Url(), Small());
    ASSERT_TRUE(s.ok()) << s.status().message();
    CheckContract(s->get());
  }
  // A new process (here: a new connection) sees all of it.
  auto again = NewRedisStore(redis.Url(), Small());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->LoadRanks()->size(), 2u);
  EXPECT_EQ((*again)->LoadFindings()->size(), 2u);
  EXPECT_FALSE(*(*again)->AddFinding("missing_rank pg 0 seq 4 culprits 3", "{}"));
  // Another job shares the server, not the keys.
  StoreOptions other = Small();
  other.job = "other";
  auto o = NewRedisStore(redis.Url(), other);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE((*o)->LoadRanks()->empty());
}

// Reports stored from many threads at once (the service's threads, whose
// writes share round trips: RedisStore's group commit) are each there
// once the call returns, with the record that came with them.
void CheckConcurrentReports(StateStore* s) {
  constexpr int kThreads = 8, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([s, t] {
      for (int i = 0; i < kEach; ++i) {
        Rank rank = 100 + t;
        RankRecord record{rank, "", "0=" + std::to_string(i) + "/" + std::to_string(i), 10 + i, 10 + i, ""};
        ASSERT_TRUE(s->AppendReport(rank, "t" + std::to_string(t) + " r" + std::to_string(i), record).ok());
        // Held already: the report may be acknowledged now.
        auto ranks = s->LoadRanks();
        ASSERT_TRUE(ranks.ok());
        auto it = std::find_if(ranks->begin(), ranks->end(), [&](const RankRecord& r) { return r.rank == rank; });
        ASSERT_NE(it, ranks->end());
        EXPECT_EQ(it->progress, record.progress);
      }
    });
  for (auto& th : threads) th.join();
  auto reports = s->LoadReports();
  ASSERT_TRUE(reports.ok());
  for (int t = 0; t < kThreads; ++t) {
    std::vector<std::string> got;
    for (const auto& [rank, text] : *reports)
      if (rank == 100 + t) got.push_back(text);
    ASSERT_EQ(got.size(), 3u) << "rank " << 100 + t;  // the last reports_per_rank, in order
    EXPECT_EQ(got.back(), "t" + std::to_string(t) + " r" + std::to_string(kEach - 1));
  }
}

TEST(StateStoreTest, MemoryConcurrentReports) {
  auto s = NewMemoryStore(Small());
  CheckConcurrentReports(s.get());
}

TEST(StateStoreTest, RedisConcurrentReportsShareRoundTrips) {
  RedisServer redis;
  if (!redis.running()) GTEST_SKIP() << "redis-server not installed";
  auto s = NewRedisStore(redis.Url(), Small());
  ASSERT_TRUE(s.ok()) << s.status().message();
  CheckConcurrentReports(s->get());
}

TEST(StateStoreTest, RedisErrorsAreStatuses) {
  EXPECT_EQ(NewRedisStore("http://x:1", {}).status().code(), Status::Code::kInvalidArgument);
  auto s = NewRedisStore("redis://127.0.0.1:" + std::to_string(FreePort()), {});
  EXPECT_EQ(s.status().code(), Status::Code::kIo);
}

TEST(StateStoreTest, RankRecordEncoding) {
  RankRecord r{7, "http://h:2", "0=1/1", 5, 4, "a"};
  RankRecord back;
  ASSERT_TRUE(RankRecord::Decode(7, r.Encode(), &back));
  EXPECT_EQ(back.url, "http://h:2");
  EXPECT_EQ(back.changed_ms, 4);
  EXPECT_FALSE(RankRecord::Decode(7, "too\tfew", &back));
  EXPECT_FALSE(RankRecord::Decode(7, "a\tb\tx\t1\tc", &back));
  // The agent's word that the counters are collective seqs travels; an
  // older watch's 5-field record decodes without it.
  EXPECT_FALSE(back.collectives);
  r.collectives = true;
  ASSERT_TRUE(RankRecord::Decode(7, r.Encode(), &back));
  EXPECT_TRUE(back.collectives);
  EXPECT_EQ(back.agent, "a");
  ASSERT_TRUE(RankRecord::Decode(7, "u\t0=1/1\t5\t4\ta", &back));
  EXPECT_FALSE(back.collectives);
  EXPECT_FALSE(RankRecord::Decode(7, "u\t0=1/1\t5\t4\ta\tx", &back));
}

}  // namespace
}  // namespace hangdx::live
