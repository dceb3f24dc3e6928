#include "hangdx/analyze/checks/stack_sites.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::RunCheck;
using Ranks = std::vector<model::Rank>;

TEST(StackSitesCheck, TwoCallSitesNameTheSmallerSide) {
  // sglang#27489: rank 0 in all_reduce under writing_check, ranks 1-3 in the
  // next iteration's broadcast.
  JobBuilder b;
  b.Stack(0, {"all_reduce", "writing_check", "check_hicache_events", "event_loop_overlap"});
  for (int r = 1; r < 4; ++r) b.Stack(r, {"broadcast", "broadcast_pyobj", "recv_requests", "event_loop_overlap"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(f.culprit_ranks, Ranks{0});
  EXPECT_EQ(f.op, "broadcast");
  EXPECT_EQ(f.summary,
            "the ranks' stacks are in different collectives: ranks 1-3 in broadcast in broadcast_pyobj; rank 0 in "
            "all_reduce in writing_check");
  ASSERT_EQ(f.evidence.size(), 4u);
  EXPECT_EQ(f.evidence[0].note, "stack (line 1): all_reduce <- writing_check <- check_hicache_events");
}

TEST(StackSitesCheck, ARankInNoCollectiveIsTheMissingRank) {
  JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Stack(r, {"wait", "all_reduce", "train_step"});
  b.Stack(3, {"save", "save_checkpoint", "train_step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].summary, "ranks 0-2 are blocked in all_reduce in train_step while rank 3 is in no collective");
}

// testdata/torch/sub_sleep: rank 0 in its pair's all_reduce, ranks 2-3 in
// the world's (another call site; stacks name no pg), rank 1 asleep. Was a
// collective_mismatch naming rank 0.
TEST(StackSitesCheck, ARankInNoCollectiveBesideTwoCallSitesIsTheMissingRank) {
  JobBuilder b;
  b.Stack(0, {"all_reduce", "pair_step"}).Stack(1, {"sleep", "checkpoint"});
  for (int r = 2; r < 4; ++r) b.Stack(r, {"all_reduce", "world_step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{1});
  EXPECT_EQ(fs[0].summary,
            "rank 1 is in no collective while the others are blocked in collectives at 2 call sites (ranks 2-3 in "
            "all_reduce in world_step; rank 0 in all_reduce in pair_step)");
}

TEST(StackSitesCheck, ARankInNoCollectiveWhoseLogSaysItCrashedIsTheCrashedRank) {
  // The fresh-user tester's torchrun log: rank 1's traceback ends in an
  // OOM, ranks 0 and 2 are in all_reduce ("Connection closed by peer").
  // Was missing_rank ("rank 1 is in no collective": py-spy a dead process).
  JobBuilder b;
  for (int r : {0, 2}) b.Stack(r, {"all_reduce", "wrapper", "<module>"});
  b.Stack(1, {"<module>"});
  b.Event(1, model::LogEvent::Kind::kCrash, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, (std::vector<model::Rank>{1}));
  EXPECT_NE(fs[0].summary.find("OutOfMemoryError"), std::string::npos) << fs[0].summary;
}

TEST(StackSitesCheck, OneCallSiteOrRanksWithOpsSayNothing) {
  JobBuilder same;
  for (int r = 0; r < 3; ++r) same.Stack(r, {"all_reduce", "train_step"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, same.Build()).empty());
  // Rank 1 has recorded ops: its entries speak for it, leaving one stack.
  JobBuilder ops;
  ops.Stack(0, {"all_reduce", "a"}).Steps(1, "0", 1, 1).Stack(1, {"broadcast", "b"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, ops.Build()).empty());
}

// testdata/torch/p2p_tag: rank 0 in send(tag=1), rank 1 in recv(tag=2);
// the stacks show neither tag. Was collective_mismatch naming rank 0.
TEST(StackSitesCheck, ASendAndARecvThatDoNotCompleteAreAP2pMismatchOfBoth) {
  JobBuilder b;
  b.Stack(0, {"send", "step"}).Stack(1, {"recv", "step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.World(2).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].summary,
            "the ranks' stacks are in point-to-point calls that do not complete: rank 1 in recv in step; rank 0 in "
            "send in step: sends and recvs that do not pair (a different tag, peer, size or dtype)");
  // The world inferred from the two files: the same, and it says the peers
  // may be elsewhere.
  JobBuilder inferred;
  inferred.Stack(0, {"send", "wrapper", "step"}).Stack(1, {"recv", "wrapper", "step"});
  fs = RunCheck(&StackSitesCheck, inferred.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pMismatch);
  EXPECT_NE(fs[0].summary.find("world size unknown"), std::string::npos) << fs[0].summary;
}

// testdata/torch/g's timeouts: both ranks of a 2-rank world in send. Each
// can only send to the other: a cycle. With more ranks (or the world not
// known) the peers are not known: no cycle is claimed.
TEST(StackSitesCheck, BothRanksOfATwoRankWorldInSendAreAP2pCycle) {
  JobBuilder two;
  for (int r = 0; r < 2; ++r) two.Stack(r, {"send", "step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, two.World(2).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pCycle);
  EXPECT_EQ(fs[0].cycle, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1}));
  JobBuilder three;
  for (int r = 0; r < 3; ++r) three.Stack(r, {"recv", "step"});
  fs = RunCheck(&StackSitesCheck, three.World(3).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1, 2}));
  EXPECT_NE(fs[0].summary.find("every rank receives, none sends"), std::string::npos) << fs[0].summary;
}

// Ranks of a given world that left no stack may be the peers the P2P calls
// wait for: undecided, every one a candidate.
TEST(StackSitesCheck, P2pWaitsWithRanksWithoutAStackAreUndecided) {
  JobBuilder b;
  b.Stack(0, {"send", "step"}).Stack(1, {"recv", "step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].candidates, (Ranks{0, 1, 2, 3}));
}

// gloo's Flight Recorder records no P2P op: a dump whose ops all finished
// leaves the stack in send or recv as the only sign of where the rank
// waits (p2p_tag's folder: dumps and stacks). A collective in the stack past
// such a dump is still the dump's to tell.
TEST(StackSitesCheck, AStackInP2pPastAFinishedDumpSpeaks) {
  JobBuilder b;
  b.Steps(0, "0", 1, 1).Stack(0, {"send", "step"}).Steps(1, "0", 1, 1).Stack(1, {"recv", "step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.World(2).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pMismatch);
  JobBuilder coll;
  coll.Steps(0, "0", 1, 1).Stack(0, {"all_reduce", "a"}).Steps(1, "0", 1, 1).Stack(1, {"broadcast", "b"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, coll.Build()).empty());
}

// A rank whose log says its peer is gone (a killed rank): the lost-peer
// check tells it; the stacks are not a P2P mismatch.
TEST(StackSitesCheck, P2pStacksOfRanksThatLostAPeerWithNoTimeoutAreNoP2pMismatch) {
  JobBuilder b;
  b.Stack(0, {"send", "step"}).Stack(1, {"recv", "step"});
  b.Event(0, model::LogEvent::Kind::kPeerLost, "Connection closed by peer [127.0.0.1]:18823");
  for (const Finding& f : RunCheck(&StackSitesCheck, b.World(2).Build())) EXPECT_NE(f.kind, Kind::kP2pMismatch);
  // g: rank 0's send timed out, its exit closed rank 1's connection.
  JobBuilder g;
  g.Stack(0, {"send", "step"}).Stack(1, {"send", "step"});
  g.Event(0, model::LogEvent::Kind::kTimeout, "Timed out waiting 4000ms for send operation to complete");
  g.Event(1, model::LogEvent::Kind::kPeerLost, "Connection closed by peer [127.0.0.1]:18823");
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, g.World(2).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kP2pCycle);
}

// testdata/torch/raise3_stacks without rank 3's file: ranks 0-2 in one
// all_reduce. With the world given (4), rank 3 is the one they wait for;
// with it inferred from the files (3), no rank is blamed, least of all a
// waiter.
TEST(StackSitesCheck, OneCallSiteInAGivenWorldBlamesTheRanksWithoutAStack) {
  JobBuilder given;
  for (int r = 0; r < 3; ++r) given.Stack(r, {"all_reduce", "step"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, given.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].summary,
            "ranks 0-2 are blocked in all_reduce in step while rank 3 of the 4 ranks left no stack: it never "
            "arrived there (or died)");
  JobBuilder inferred;
  for (int r = 0; r < 3; ++r) inferred.Stack(r, {"all_reduce", "step"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, inferred.Build()).empty());
}

TEST(StackSitesCheck, EveryRankInTheSameCallOutsideCollectivesIsAHangInsideIt) {
  // sglang#33642: every scheduler in cuModuleLoadData (py-spy, thread active).
  JobBuilder b;
  for (int r = 0; r < 4; ++r) b.Stack(r, {"cuModuleLoadData", "loadBinary", "_init_handles", "run"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kResourceDeadlock);
  EXPECT_TRUE(fs[0].culprit_ranks.empty());
  EXPECT_EQ(fs[0].op, "cuModuleLoadData");
  EXPECT_EQ(fs[0].roles.at(0).ranks, (Ranks{0, 1, 2, 3}));
  // Different calls, or threads py-spy saw idle (waiting on something): nothing said.
  JobBuilder apart;
  apart.Stack(0, {"cuModuleLoadData", "run"}).Stack(1, {"forward", "run"});
  EXPECT_TRUE(RunCheck(&StackSitesCheck, apart.Build()).empty());
  model::Job idle = JobBuilder().Stack(0, {"poll", "dequeue"}).Stack(1, {"poll", "dequeue"}).Build();
  for (auto& d : idle.dumps) d.stacks[0].thread = "Thread 7 (idle): \"MainThread\"";
  EXPECT_TRUE(RunCheck(&StackSitesCheck, idle).empty());
  // store_host_waits_late_host: the tracebacks of ranks whose logs say the
  // call failed (a store they could not reach) are where they raised.
  JobBuilder raised;
  for (int r = 1; r < 3; ++r)
    raised.Stack(r, {"_create_c10d_store", "init_process_group"})
        .Event(r, model::LogEvent::Kind::kPeerLost, "The client socket has timed out after 6000ms");
  EXPECT_TRUE(RunCheck(&StackSitesCheck, raised.Build()).empty());
}

TEST(StackSitesCheck, StacksOfRanksThatAllCrashedAreNoHangInsideTheCall) {
  // testdata/torch/all_segv: faulthandler prints the stack the SIGSEGV hit
  // (string_at) on every rank: they died in that call, they do not wait in
  // it (the crash is passes/unnamed_crash's finding). With one rank alive in
  // the same call, the ranks whose logs report the crash are the cause.
  JobBuilder b;
  for (int r = 0; r < 3; ++r)
    b.Stack(r, {"string_at", "<module>"}).Event(r, model::LogEvent::Kind::kCrash, "Fatal Python error: Segmentation fault");
  EXPECT_TRUE(RunCheck(&StackSitesCheck, b.Build()).empty());
  b.Stack(3, {"string_at", "<module>"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{0, 1, 2}));
}

TEST(StackSitesCheck, EqualSidesWithRanksWithoutAStackAreUndecided) {
  JobBuilder b;
  b.Stack(0, {"all_reduce", "step"}).Stack(1, {"broadcast", "load"});
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.World(4).Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kUndecided);
  EXPECT_EQ(fs[0].candidates, (Ranks{0, 1}));
  EXPECT_EQ(fs[0].would_decide.rfind("the stacks of ranks 2-3", 0), 0u) << fs[0].would_decide;
}

// A stack with file and line per frame, as py-spy prints it (short paths).
void AddStack(JobBuilder* b, model::Rank r, std::string thread, std::vector<model::Frame> innermost_first) {
  model::StackSample st;
  st.thread = std::move(thread);
  st.frames = std::move(innermost_first);
  st.file = "pyspy_rank_" + std::to_string(r) + ".txt";
  st.line = 4;
  b->FromLog(r);
  b->Rank(r).stacks.push_back(std::move(st));
}

std::vector<model::Frame> InBackward(int line) {  // testdata/torch/ddp_uneven ranks 0-2, py-spy
  return {{"_engine_run_backward", "torch/autograd/graph.py", 979},
          {"backward", "torch/autograd/__init__.py", 395},
          {"Tensor.backward", "torch/_tensor.py", 623},
          {"sc_ddp_uneven", "scenarios.py", line},
          {"main", "worker.py", 143}};
}

std::vector<model::Frame> In(const std::string& op, const std::string& caller, int line) {
  return {{op, "torch/distributed/distributed_c10d.py", 3252},
          {"_exception_logger.<locals>.wrapper", "torch/distributed/c10d_logger.py", 83},
          {caller, "scenarios.py", line},
          {"main", "worker.py", 143}};
}

// An idle helper thread blocked in multiprocessing's Connection.recv, as
// faulthandler names it (`recv`) and lists it: before the main thread.
std::vector<model::Frame> ControlChannel() {
  return {{"_recv", "multiprocessing/connection.py", 395},
          {"recv", "multiprocessing/connection.py", 250},
          {"control_channel", "scenarios.py", 269},
          {"run", "threading.py", 982},
          {"_bootstrap", "threading.py", 1002}};
}

TEST(StackSitesCheck, DdpBackwardIsTheGradientAllReduce) {
  // ddp_uneven: ranks 0-2 in loss.backward() (DDP's Reducer waits for the
  // gradient all_reduce), rank 3 left the loop for the barrier. Was
  // missing_rank "ranks 0-2 are in no collective", culprits 0-2.
  JobBuilder b;
  for (int r = 0; r < 3; ++r) AddStack(&b, r, "Thread 1 (idle): \"MainThread\"", InBackward(298));
  AddStack(&b, 3, "Thread 1 (idle): \"MainThread\"", In("barrier", "sc_ddp_uneven", 301));
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].op, "all_reduce");
  EXPECT_EQ(fs[0].summary,
            "the ranks' stacks are in different collectives: ranks 0-2 in DDP backward (gradient all_reduce) in "
            "sc_ddp_uneven at scenarios.py:298; rank 3 in barrier in sc_ddp_uneven at scenarios.py:301");

  // Rank 3 elsewhere (a checkpoint), not in a collective: it is the missing rank.
  JobBuilder c;
  for (int r = 0; r < 3; ++r) AddStack(&c, r, "", InBackward(298));
  AddStack(&c, 3, "", {{"save", "serialization.py", 40}, {"main", "worker.py", 150}});
  fs = RunCheck(&StackSitesCheck, c.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kMissingRank);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{3});
  EXPECT_EQ(fs[0].summary,
            "ranks 0-2 are blocked in DDP backward (gradient all_reduce) in sc_ddp_uneven at scenarios.py:298 while "
            "rank 3 is in no collective");
}

TEST(StackSitesCheck, TheMainThreadSpeaksNotAnIdleHelperListedFirst) {
  // b_threads: every rank's first thread is a helper in Connection.recv.
  // Was "No hang found" (every rank taken to be in recv at one site).
  JobBuilder b;
  for (int r = 0; r < 3; ++r) {
    AddStack(&b, r, "Thread 0x00007fac48d386c0", ControlChannel());
    AddStack(&b, r, "Thread 0x00007fac6680eb80", r < 2 ? In("all_reduce", "step", 59) : In("barrier", "sc_b", 93));
  }
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(fs[0].culprit_ranks, Ranks{2});
  EXPECT_EQ(fs[0].summary,
            "the ranks' stacks are in different collectives: ranks 0-1 in all_reduce in step at scenarios.py:59; "
            "rank 2 in barrier in sc_b at scenarios.py:93");
  ASSERT_EQ(fs[0].evidence.size(), 3u);
  EXPECT_EQ(fs[0].evidence[2].note, "stack (line 4): barrier <- _exception_logger.<locals>.wrapper <- sc_b");
}

TEST(StackSitesCheck, RanksThatCrashedInACollectiveAreTheCauseNotAnotherSide) {
  // bcast_unpickle's stderr: the receivers' tracebacks end in their own
  // error inside broadcast_object_list; the sender's in its all_reduce.
  // Was collective_mismatch naming the sender, rank 0.
  JobBuilder b;
  AddStack(&b, 0, "", In("all_reduce", "step", 59));
  for (int r : {1, 2}) {
    AddStack(&b, r, "", In("broadcast_object_list", "sc_bcast_unpickle", 336));
    b.Event(r, model::LogEvent::Kind::kCrash, "RuntimeError: Numpy is not available");
  }
  std::vector<Finding> fs = RunCheck(&StackSitesCheck, b.Build());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kind, Kind::kCrashedRank);
  EXPECT_EQ(fs[0].culprit_ranks, (Ranks{1, 2}));
  ASSERT_EQ(fs[0].roles.size(), 2u);
  EXPECT_EQ(fs[0].roles[1].role, "blocked in all_reduce in step at scenarios.py:59");
  EXPECT_EQ(fs[0].roles[1].ranks, Ranks{0});
}

}  // namespace
}  // namespace hangdx::analyze
