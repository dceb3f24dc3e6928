#include "hangdx/sim/fixes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "hangdx/model/testing/device_job_builder.h"
#include "hangdx/sim/simulate.h"

namespace hangdx::sim {
namespace {

using model::testing::DeviceJobBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

model::DeviceJob Example(const std::string& name) {
  auto job = LoadSchedule(std::string(HANGDX_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(job.ok()) << job.status().message();
  return job.ok() ? *job : model::DeviceJob{};
}

// The changes that pass, as "kind: change".
std::set<std::string> Passing(const model::DeviceJob& job) {
  auto found = Explore(job);
  EXPECT_TRUE(found.ok() && found->deadlock);
  std::set<std::string> out;
  if (!found.ok()) return out;
  for (const FixTrial& t : SearchFixes(job, *found, {})) {
    EXPECT_FALSE(t.bound_reached) << t.change;
    if (t.passes) out.insert(t.kind + ": " + t.change);
  }
  return out;
}

TEST(SearchFixes, P2pSendSendParity) {
  EXPECT_THAT(Passing(Example("p2p-send-send/deadlock.json")),
              ElementsAre("parity: on odd ranks, post each recv before its paired send (pair by parity)"));
}

TEST(SearchFixes, StreamEventCycleHasNoMechanicalFix) {
  EXPECT_TRUE(Passing(Example("stream-event-cycle/deadlock.json")).empty());
}

TEST(SearchFixes, TaskQueueModes) {
  EXPECT_THAT(Passing(Example("task-queue/deadlock.json")),
              ElementsAre("queue_mode: task queue mode off (now per_device)",
                          "queue_mode: task queue mode per_stream (now per_device)"));
}

TEST(SearchFixes, TwoCommunicatorsOneOrder) {
  std::set<std::string> p = Passing(Example("two-communicators/deadlock.json"));
  EXPECT_EQ(p.size(), 3u);
  EXPECT_TRUE(p.count("capacity: pool aicpu capacity 2 on every rank (now 1)"));
  EXPECT_TRUE(
      p.count("order: issue the ops of pgs pg1, pg2 in one order on every rank (rank 0's order: rank 1 "
              "thread main issues reduce_scatter (pg1 seq 0) before recv_expert_map [recv from 0 (pg2 seq 0)])"))
      << *p.begin();
  bool no_hold = false;
  for (const auto& s : p) no_hold |= s.rfind("no_hold: collectives and P2P ops do not hold a unit of aicpu", 0) == 0;
  EXPECT_TRUE(no_hold);
}

TEST(SearchFixes, AicpuPoolNoRetryOrMoreUnits) {
  std::set<std::string> p = Passing(Example("aicpu-pool/deadlock.json"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(*p.begin(), "capacity: pool aicpu capacity 3 on every rank (now 2)");
  EXPECT_THAT(*p.rbegin(), HasSubstr("no_hold: collectives and P2P ops do not hold a unit of aicpu while they wait"));
}

TEST(SearchFixes, FixedExamplesPass) {
  for (const char* f : {"p2p-send-send/fixed.json", "stream-event-cycle/fixed.json", "task-queue/fixed.json",
                        "two-communicators/fixed.json", "aicpu-pool/fixed.json", "aicpu-pool/fixed-fewer-pgs.json"}) {
    auto r = Explore(Example(f));
    ASSERT_TRUE(r.ok()) << f;
    EXPECT_FALSE(r->deadlock) << f;
    EXPECT_FALSE(r->bound_reached) << f;
  }
}

// The consistent order keeps each pg's own order and the non-pg ops' slots.
TEST(FixCandidates, ConsistentOrderRewritesTheOddRank) {
  DeviceJobBuilder b;
  b.Pg("a", {0, 1});
  b.Pg("b", {0, 1});
  b.Collective(0, "main", "s", "a", "a0");
  b.Compute(0, "main", "s", "k");
  b.Collective(0, "main", "s", "b", "b0");
  b.Collective(0, "main", "s", "a", "a1");
  b.Collective(1, "main", "s", "b", "b0");
  b.Compute(1, "main", "s", "k");
  b.Collective(1, "main", "s", "a", "a0");
  b.Collective(1, "main", "s", "a", "a1");
  model::DeviceJob job = b.Build();
  auto found = Explore(job);
  ASSERT_TRUE(found.ok() && found->deadlock);
  std::vector<FixCandidate> cands = FixCandidates(job, found->stuck);
  const FixCandidate* order = nullptr;
  for (const auto& c : cands) {
    if (c.kind == "order" && !order) order = &c;
  }
  ASSERT_NE(order, nullptr);
  std::vector<std::string> names;
  for (model::OpId id : order->job.ranks[1].threads[0].pending) names.push_back(order->job.ops[id].name);
  EXPECT_THAT(names, ElementsAre("a0", "k", "b0", "a1"));
  EXPECT_THAT(order->change, HasSubstr("rank 0's order: rank 1 thread main issues a0 (a seq 0) before b0 (b seq 0)"));
}

// A snapshot (ops already issued) cannot switch queue modes.
TEST(FixCandidates, NoQueueModeForSnapshots) {
  auto found = Explore(Example("task-queue/deadlock.json"));
  ASSERT_TRUE(found.ok() && found->deadlock);
  for (const auto& c : FixCandidates(found->stuck, found->stuck)) EXPECT_NE(c.kind, "queue_mode");
}

}  // namespace
}  // namespace hangdx::sim
