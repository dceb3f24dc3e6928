#include "hangdx/model/device.h"

#include <gtest/gtest.h>

namespace hangdx::model {
namespace {

TEST(DevOpKindName, EveryKind) {
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kCompute), "compute");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kRecord), "record");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kWait), "wait");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kCollective), "collective");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kSend), "send");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kRecv), "recv");
  EXPECT_STREQ(DevOpKindName(DevOp::Kind::kHostSync), "host_sync");
}

TEST(QueueModeName, EveryMode) {
  EXPECT_STREQ(QueueModeName(QueueMode::kOff), "off");
  EXPECT_STREQ(QueueModeName(QueueMode::kPerDevice), "per_device");
  EXPECT_STREQ(QueueModeName(QueueMode::kPerStream), "per_stream");
}

TEST(DeviceJob, FindRank) {
  DeviceJob job;
  for (Rank r : {0, 2, 5}) {
    DeviceRank d;
    d.rank = r;
    job.ranks.push_back(d);
  }
  ASSERT_NE(job.FindRank(2), nullptr);
  EXPECT_EQ(job.FindRank(2)->rank, 2);
  EXPECT_EQ(job.FindRank(5)->rank, 5);
  EXPECT_EQ(job.FindRank(1), nullptr);
  EXPECT_EQ(job.FindRank(6), nullptr);
  EXPECT_EQ(job.FindRank(-1), nullptr);
  const DeviceJob& cjob = job;
  EXPECT_EQ(cjob.FindRank(0), &job.ranks[0]);
}

DevOp Op(DevOp::Kind kind, Rank rank, std::string pg, Rank peer = -1, int64_t seq = -1) {
  DevOp op;
  op.kind = kind;
  op.rank = rank;
  op.pg = std::move(pg);
  op.peer = peer;
  op.seq = seq;
  return op;
}

// Collectives count per (rank, pg); finished ops come first, then streams,
// queues and threads; seqs already set are kept and counted after.
TEST(DeviceJob, NumberCollectives) {
  DeviceJob job;
  job.ops = {Op(DevOp::Kind::kCollective, 0, "tp"),         // 0: finished
             Op(DevOp::Kind::kCollective, 0, "tp"),         // 1: pending in thread
             Op(DevOp::Kind::kCollective, 0, "tp"),         // 2: on stream
             Op(DevOp::Kind::kCollective, 0, "pp"),         // 3: in queue
             Op(DevOp::Kind::kCollective, 1, "tp", -1, 7),  // 4: set already
             Op(DevOp::Kind::kCollective, 1, "tp"),         // 5: pending
             Op(DevOp::Kind::kCompute, 0, "")};             // 6: not numbered
  job.finished = {true, false, false, false, false, false, false};
  DeviceRank r0;
  r0.rank = 0;
  r0.threads.push_back(HostThread{"main", {1, 6}, -1});
  r0.streams.push_back(Stream{"comm", {2}, false});
  r0.queues.push_back(TaskQueue{"device", {3}, -1});
  DeviceRank r1;
  r1.rank = 1;
  r1.threads.push_back(HostThread{"main", {5}, -1});
  r1.streams.push_back(Stream{"comm", {4}, false});
  job.ranks = {r0, r1};
  job.Number();
  EXPECT_EQ(job.ops[0].seq, 0);
  EXPECT_EQ(job.ops[2].seq, 1);
  EXPECT_EQ(job.ops[1].seq, 2);
  EXPECT_EQ(job.ops[3].seq, 0);  // pp counts apart
  EXPECT_EQ(job.ops[4].seq, 7);
  EXPECT_EQ(job.ops[5].seq, 8);
  EXPECT_EQ(job.ops[6].seq, -1);
}

// P2P counts per (pg, sender, receiver); an any-source recv counts apart
// from recvs that name the sender.
TEST(DeviceJob, NumberP2p) {
  DeviceJob job;
  job.ops = {Op(DevOp::Kind::kSend, 0, "pp", 1),   // 0
             Op(DevOp::Kind::kSend, 0, "pp", 2),   // 1
             Op(DevOp::Kind::kSend, 0, "pp", 1),   // 2
             Op(DevOp::Kind::kRecv, 1, "pp", 0),   // 3
             Op(DevOp::Kind::kRecv, 1, "pp", -1),  // 4
             Op(DevOp::Kind::kRecv, 1, "pp", 0)};  // 5
  job.finished.assign(job.ops.size(), false);
  DeviceRank r0;
  r0.rank = 0;
  r0.threads.push_back(HostThread{"main", {0, 1, 2}, -1});
  DeviceRank r1;
  r1.rank = 1;
  r1.threads.push_back(HostThread{"main", {3, 4, 5}, -1});
  job.ranks = {r0, r1};
  job.Number();
  EXPECT_EQ(job.ops[0].seq, 0);
  EXPECT_EQ(job.ops[1].seq, 0);
  EXPECT_EQ(job.ops[2].seq, 1);
  EXPECT_EQ(job.ops[3].seq, 0);
  EXPECT_EQ(job.ops[4].seq, 0);
  EXPECT_EQ(job.ops[5].seq, 1);
}

// Ops named twice (a blocked-on op that also sits on a stream) get one seq,
// and bad ids are ignored.
TEST(DeviceJob, NumberOnceAndBadIds) {
  DeviceJob job;
  job.ops = {Op(DevOp::Kind::kCollective, 0, "tp"), Op(DevOp::Kind::kCollective, 0, "tp")};
  job.finished = {false};  // shorter than ops: tolerated
  DeviceRank r0;
  r0.rank = 0;
  r0.streams.push_back(Stream{"comm", {0, 99, -5}, true});
  r0.threads.push_back(HostThread{"main", {1}, 0});
  job.ranks = {r0};
  job.Number();
  EXPECT_EQ(job.ops[0].seq, 0);
  EXPECT_EQ(job.ops[1].seq, 1);
}

}  // namespace
}  // namespace hangdx::model
