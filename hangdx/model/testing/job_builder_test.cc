#include "hangdx/model/testing/job_builder.h"

#include <gtest/gtest.h>

#include "hangdx/model/testing/device_job_builder.h"

namespace hangdx::model::testing {
namespace {

// The header's example: 8 ranks on pg 0, rank 3 stuck before seq 41.
TEST(JobBuilder, HeaderExample) {
  JobBuilder b("nccl");
  for (Rank r = 0; r < 8; ++r) {
    b.Steps(r, "0", 1, 40);
    if (r != 3) b.Coll(r, "0", 41, "all_reduce", /*done=*/false);
  }
  Job job = b.Members("0", RankRange(0, 8)).Build();
  ASSERT_EQ(job.dumps.size(), 8u);
  const RankDump& d3 = job.dumps[3];
  EXPECT_EQ(d3.rank, 3);
  EXPECT_EQ(d3.file, "trace_3");
  ASSERT_EQ(d3.ops.size(), 40u);
  EXPECT_EQ(d3.ops.back().collective_seq, 40);
  const OpRecord& waiting = job.dumps[2].ops.back();
  EXPECT_EQ(waiting.collective_seq, 41);
  EXPECT_FALSE(waiting.completed);
  EXPECT_EQ(waiting.state, OpState::kScheduled);
  EXPECT_EQ(waiting.backend, "nccl");
  EXPECT_EQ(waiting.op, "all_reduce");
  EXPECT_EQ(waiting.record_id, 40);
  EXPECT_EQ(job.dumps[2].ops.front().state, OpState::kCompleted);
  EXPECT_EQ(d3.pg_config.at("0").ranks, RankRange(0, 8));
  EXPECT_EQ(d3.pg_config.at("0").desc, "default_pg");
}

TEST(JobBuilder, RanksAreSortedAndMembersReachEveryDump) {
  JobBuilder b;
  b.Members("tp", {0, 1});
  b.Wait(5, "all_reduce", {1}, 7).Stack(2, {"inner", "outer"}).Event(0, LogEvent::Kind::kTimeout, "timed out");
  Job job = b.World(6).Build();
  ASSERT_EQ(job.dumps.size(), 3u);
  EXPECT_EQ(job.dumps[0].rank, 0);
  EXPECT_EQ(job.dumps[2].rank, 5);
  EXPECT_FALSE(job.dumps[2].from_flight_recorder);
  EXPECT_EQ(job.dumps[2].wait->op_seq, 7);
  EXPECT_FALSE(job.dumps[1].from_flight_recorder);
  EXPECT_EQ(job.dumps[1].stacks[0].frames[0].name, "inner");
  EXPECT_EQ(job.dumps[0].events[0].file, "rank0.log");
  for (const auto& d : job.dumps) EXPECT_TRUE(d.pg_config.count("tp")) << d.rank;
  EXPECT_EQ(job.world_size, 6);
}

TEST(JobBuilder, AFullEventKeepsItsFieldsAndGetsAFileAndLine) {
  LogEvent stall;
  stall.kind = LogEvent::Kind::kCulprit;
  stall.message_id = "horovod.stall.stalled_ranks_block";
  stall.ranks = {4};
  stall.waited_ms = 60000;
  Job job = JobBuilder().Event(0, LogEvent{}).Event(0, stall).Build();
  const LogEvent& e = job.dumps[0].events[1];
  EXPECT_EQ(e.kind, LogEvent::Kind::kCulprit);
  EXPECT_EQ(e.ranks, std::vector<Rank>{4});
  EXPECT_EQ(e.waited_ms, 60000);
  EXPECT_EQ(e.file, "rank0.log");
  EXPECT_EQ(e.line, 2);
}

TEST(JobBuilder, GlooFinishedOpsStayScheduled) {
  Job job = JobBuilder("gloo").Coll(0, "0", 1, "broadcast").P2P(0, "0", "send 0->1").Build();
  ASSERT_EQ(job.dumps[0].ops.size(), 2u);
  EXPECT_EQ(job.dumps[0].ops[0].state, OpState::kScheduled);
  EXPECT_TRUE(job.dumps[0].ops[0].retired);
  EXPECT_TRUE(job.dumps[0].ops[1].is_p2p);
  EXPECT_EQ(job.dumps[0].ops[1].p2p_peer_local, 1);
}

TEST(TrainingJob, OneMissingAllReduce) {
  Job job = TrainingJob(64, 3, 4, /*culprit=*/7);
  ASSERT_EQ(job.dumps.size(), 64u);
  EXPECT_EQ(job.world_size, 64);
  EXPECT_EQ(job.dumps[0].ops.size(), 12u);
  EXPECT_EQ(job.dumps[7].ops.size(), 11u);
  EXPECT_EQ(job.dumps[0].pg_config.size(), 3u);  // world, tp, pp
  EXPECT_EQ(job.dumps[9].pg_config.at("2").ranks, RankRange(8, 16));
}

TEST(DeviceJobBuilder, Schedule) {
  DeviceJobBuilder b(QueueMode::kPerDevice);
  b.Pg("tp", {1, 0});
  b.Record(1, "compute", "compute", "e0");
  b.Collective(1, "comm", "comm", "tp").host_blocking = true;
  b.Collective(0, "comm", "comm", "tp");
  DeviceJob job = b.Build();
  EXPECT_EQ(job.pgs.at("tp"), (std::vector<Rank>{0, 1}));
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].rank, 0);
  ASSERT_EQ(job.ranks[1].threads.size(), 2u);
  EXPECT_EQ(job.ranks[1].threads[1].pending, (std::vector<OpId>{1}));
  EXPECT_TRUE(job.ops[1].host_blocking);
  EXPECT_EQ(job.ops[1].seq, 0);  // numbered
  EXPECT_EQ(job.finished.size(), 3u);
  EXPECT_EQ(job.origin, "test.json");
  EXPECT_EQ(job.ops[2].source, "op 2");
}

TEST(DeviceJobBuilder, Snapshot) {
  DeviceJobBuilder b;
  OpId w = b.Op(0, DevOp::Kind::kWait, "s1", "B");
  OpId r = b.Op(0, DevOp::Kind::kRecord, "s1", "A");
  OpId sync = b.Op(0, DevOp::Kind::kHostSync, "s1", "A");
  OpId drain = b.Op(0, DevOp::Kind::kHostSync, "s1");
  OpId c = b.Op(0, DevOp::Kind::kCompute, "s2", "", -1, "aicpu");
  b.Stream(0, "s1", {w, r}).Stream(0, "s2", {c}, true).Pool(0, "aicpu", 1, {c});
  b.Thread(0, "host", {drain}, sync).Done(99).Done(sync);
  DeviceJob job = b.Origin("snap.json").Build();
  EXPECT_EQ(job.ops[sync].stream, "");
  EXPECT_EQ(job.ops[sync].event, "A");
  EXPECT_EQ(job.ops[drain].stream, "s1");
  EXPECT_EQ(job.ops[drain].thread, "host");
  EXPECT_EQ(job.ops[c].name, "compute");
  EXPECT_TRUE(job.finished[sync]);
  EXPECT_EQ(job.ranks[0].threads[0].blocked_on, sync);
  EXPECT_EQ(job.ranks[0].pools[0].holders, (std::vector<OpId>{c}));
  EXPECT_EQ(job.origin, "snap.json");
}

}  // namespace
}  // namespace hangdx::model::testing
