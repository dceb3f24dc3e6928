#include "hangdx/model/job.h"

#include <gtest/gtest.h>

namespace hangdx::model {
namespace {

TEST(ParseProfilingName, Collective) {
  OpRecord op;
  op.profiling_name = "nccl:all_reduce";  // a literal outlives the record
  ParseProfilingName(&op);
  EXPECT_EQ(op.backend, "nccl");
  EXPECT_EQ(op.op, "all_reduce");
  EXPECT_EQ(op.p2p_peer_local, -1);
}

TEST(ParseProfilingName, SendAndRecv) {
  OpRecord s;
  s.profiling_name = "nccl:send 0->1";
  ParseProfilingName(&s);
  EXPECT_EQ(s.op, "send");
  EXPECT_EQ(s.p2p_self_local, 0);
  EXPECT_EQ(s.p2p_peer_local, 1);
  OpRecord r;
  r.profiling_name = "gloo:recv 1<-0";
  ParseProfilingName(&r);
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.op, "recv");
  EXPECT_EQ(r.p2p_self_local, 1);
  EXPECT_EQ(r.p2p_peer_local, 0);
}

TEST(ParseProfilingName, NoBackend) {
  OpRecord op;
  op.profiling_name = "weird";
  ParseProfilingName(&op);
  EXPECT_EQ(op.backend, "");
  EXPECT_EQ(op.op, "weird");
}

TEST(Interner, AddressCacheOnlyWhileABufferIsRead) {
  // A rank that holds one wait must not carry a 32 KB cache (a 100,000-rank
  // snapshot took 3.4 GB).
  Interner pool;
  EXPECT_EQ(pool.CacheSlots(), 0u);
  EXPECT_EQ(pool.Str("a"), "a");
  EXPECT_EQ(pool.CacheSlots(), 0u);
  std::string buffer = "nccl:all_reduce";
  std::string_view v = pool.StrFromBuffer(buffer);
  EXPECT_EQ(v, "nccl:all_reduce");
  EXPECT_EQ(pool.StrFromBuffer(buffer).data(), v.data());
  EXPECT_GT(pool.CacheSlots(), 0u);
  pool.ForgetAddresses();
  EXPECT_EQ(pool.CacheSlots(), 0u);
  EXPECT_EQ(pool.StrFromBuffer(buffer).data(), v.data());  // still interned once
}

TEST(Numel, ScalarEmptyAndOverflow) {
  EXPECT_EQ(Numel({}), 1);
  EXPECT_EQ(Numel({4, 4}), 16);
  EXPECT_EQ(Numel({0, 5}), 0);
  EXPECT_EQ(Numel({1LL << 40, 1LL << 40}), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace hangdx::model
