#include "hangdx/ingest/formats/torch_log/torch_log.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

std::vector<model::RankDump> Parse(std::string_view text, int64_t hint) {
  return ParseForTest(ParseTorchLog, text, hint).dumps;
}

TEST(TorchLog, WatchdogTimeoutsOfAce348) {
  // ai2cm/ace#348: a combined log, old prefix, no [rankN]:.
  auto d = Parse(
      "[E ProcessGroupNCCL.cpp:457] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, "
      "OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800035 milliseconds before "
      "timing out.\n"
      "[E ProcessGroupNCCL.cpp:457] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, "
      "OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800558 milliseconds before "
      "timing out.\n",
      -1);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rank, 2);
  EXPECT_EQ(d[1].rank, 3);
  ASSERT_EQ(d[1].ops.size(), 1u);
  const auto& op = d[1].ops[0];
  EXPECT_EQ(op.pg_name, "0");
  EXPECT_EQ(op.collective_seq, 1132079);
  EXPECT_EQ(op.op, "all_reduce");
  EXPECT_EQ(op.backend, "nccl");
  EXPECT_EQ(*op.input_sizes, (model::Shapes{{304640}}));
  EXPECT_TRUE(op.retired);
  EXPECT_FALSE(op.completed);
  EXPECT_EQ(op.timeout_ms, 1800000);
  EXPECT_EQ(op.duration_ms, 1800035);
  ASSERT_EQ(d[1].events.size(), 1u);
  EXPECT_EQ(d[1].events[0].kind, model::LogEvent::Kind::kTimeout);
  EXPECT_EQ(d[1].events[0].seq, 1132079);
}

TEST(TorchLog, TimeoutTakesPgFromStatusLine) {
  // Spec 3.4 example: the watchdog line says [Rank 0], the status line PG 1.
  auto d = Parse(
      "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran "
      "for 600081 milliseconds before timing out.\n"
      "[rank0]:[E1218 20:27:21.484910731 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 0]  failure detected by "
      "watchdog at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1\n",
      -1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_EQ(d[0].ops[0].pg_name, "1");
  EXPECT_EQ(d[0].ops[0].op, "broadcast");
  EXPECT_EQ(d[0].pg_status.at(1).last_enqueued, 547);
  EXPECT_EQ(d[0].pg_status.at(1).last_completed, -1);
}

// vllm#16477: a GATHER whose NumelOut is twice its NumelIn has two members,
// though only rank 0's log is there; an all_reduce's counts say nothing.
TEST(TorchLog, TheCountsOfAGatherGiveItsPgSize) {
  auto d = Parse(
      "[rank0]:[E411 10:18:06.598287174 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=11, OpType=GATHER, NumelIn=16000, NumelOut=32000, Timeout(ms)=600000) ran for 600012 "
      "milliseconds before timing out.\n"
      "[rank0]:[E411 10:18:06.598683243 ProcessGroupNCCL.cpp:2168] [PG ID 2 PG GUID 3 Rank 0]  failure detected by "
      "watchdog at work sequence id: 11 PG status: last enqueued work: 11, last completed work: 10\n",
      -1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_EQ(d[0].ops[0].pg_name, "3");
  ASSERT_TRUE(d[0].pg_config.count("3"));
  EXPECT_EQ(d[0].pg_config.at("3").size, 2);
  EXPECT_FALSE(d[0].pg_config.at("3").ranks_known);
  auto r = Parse(
      "[rank1]:[E ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
      "OpType=ALLREDUCE, NumelIn=300, NumelOut=300, Timeout(ms)=600000) ran for 600012 milliseconds before timing "
      "out.\n",
      -1);
  ASSERT_EQ(r.size(), 1u);
  for (const auto& [key, cfg] : r[0].pg_config) EXPECT_EQ(cfg.size, -1) << key;
}

TEST(TorchLog, DetailMismatchOfSpeechbrain2401) {
  auto d = Parse(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE, TensorShape=[25], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default))), but Rank 0 is "
      "running collective: CollectiveFingerPrint(SequenceNumber=485, OpType=BROADCAST, TensorShape=[1], "
      "TensorDtypes=Long, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)).Collectives differ\n",
      1);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rank, 0);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_EQ(d[0].ops[0].op, "broadcast");
  EXPECT_EQ(d[0].ops[0].collective_seq, 486);  // SequenceNumber counts the ops before it
  EXPECT_EQ(*d[0].ops[0].input_sizes, (model::Shapes{{1}}));
  EXPECT_EQ(*d[0].ops[0].input_dtypes, (model::Dtypes{"Long"}));
  EXPECT_EQ(d[1].ops[0].op, "all_reduce");
  EXPECT_EQ(*d[1].ops[0].input_sizes, (model::Shapes{{25}}));
  ASSERT_EQ(d[1].events.size(), 1u);
  EXPECT_EQ(d[1].events[0].kind, model::LogEvent::Kind::kMismatch);
  EXPECT_EQ(d[1].events[0].seq, 486);
  EXPECT_EQ(d[1].events[0].pg, "0");
}

// The real line of testdata/torch/c_detail/stderr/rank_0.log (torch 2.13,
// gloo): rank 0 compared every rank's fingerprint in rank order and stopped
// at rank 2, so rank 1 agrees with rank 0.
constexpr const char* kCDetailRank0 =
    "[hangdx-fi rank 0 1796022076.710] collective raised RuntimeError: Detected mismatch between collectives on "
    "ranks. Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=2, OpType=ALLREDUCE, TensorShape=[8], "
    "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided "
    "(default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 2 "
    "is running collective: CollectiveFingerPrint(SequenceNumber=2, OpType=BROADCAST, TensorShape=[8], "
    "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided "
    "(default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))).Collectives "
    "differ in the following aspects:   Op type: ALLREDUCEvs BROADCAST\n";

TEST(TorchLog, DetailMismatchNamesTheRanksBelowTheFirstDifferentOne) {
  auto d = Parse(kCDetailRank0, 0);
  ASSERT_EQ(d.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(d[r].rank, r);
    ASSERT_EQ(d[r].ops.size(), 1u) << r;
    EXPECT_EQ(d[r].ops[0].collective_seq, 3) << r;  // FR's seq of the op after two all_reduces
    EXPECT_EQ(d[r].ops[0].pg_name, "0");
    EXPECT_EQ(d[r].ops[0].backend, "gloo");  // device=cpu
    EXPECT_EQ(*d[r].ops[0].input_sizes, (model::Shapes{{8}}));
  }
  EXPECT_EQ(d[0].ops[0].op, "all_reduce");
  EXPECT_EQ(d[1].ops[0].op, "all_reduce");  // inferred: below rank 2 and not reported
  EXPECT_EQ(d[2].ops[0].op, "broadcast");
  // The event belongs to the reporting rank only.
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].seq, 3);
  EXPECT_EQ(d[0].events[0].op, "all_reduce");
  EXPECT_TRUE(d[1].events.empty());
  EXPECT_TRUE(d[2].events.empty());
}

// Rank 1's real line of testdata/torch/detail_shape_rank (torch 2.13, gloo,
// DETAIL): rank 2 all_reduces an [8, 2] tensor, ranks 0-1 an [8] one. The
// serialized fingerprints differ in length, so the wrapper printed rank 2's
// length (8) decoded as a fingerprint: "SequenceNumber=0OpType=SCATTER".
constexpr const char* kDetailLengthRank1 =
    "[default1]:[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
    "collective: CollectiveFingerPrint(SequenceNumber=2, OpType=ALLREDUCE, TensorShape=[8], TensorDtypes="
    "Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided (default), "
    "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 2 "
    "is running collective: CollectiveFingerPrint(SequenceNumber=0OpType=SCATTER).Collectives differ in t"
    "he following aspects: \t Sequence number: 2vs 0  Op type: ALLREDUCEvs SCATTER  Tensor Tensor shapes: "
    "8vs   Tensor Tensor dtypes: Floatvs   Tensor Tensor devices: TensorOptions(dtype=float (default), de"
    "vice=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), me"
    "mory_format=(nullopt))vs " "\n";

TEST(TorchLog, ALengthDecodedFingerprintIsNotTheOtherRanksOp) {
  auto d = Parse(kDetailLengthRank1, 1);
  // Rank 1's own fingerprint only: rank 2's op is not known from this line
  // (no scatter is invented for it), and rank 0, below rank 2, passed only
  // the check of the lengths (its op is not claimed either).
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 1);
  ASSERT_EQ(d[0].ops.size(), 1u);
  EXPECT_EQ(d[0].ops[0].op, "all_reduce");
  EXPECT_EQ(d[0].ops[0].collective_seq, 3);
  EXPECT_EQ(*d[0].ops[0].input_sizes, (model::Shapes{{8}}));
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].peer, 2);  // the rank it differs from is still named
}

TEST(TorchLog, AGarbledFirstDifferentRankImpliesNoOtherRanks) {
  // Fuzz campaign (torch-log, 878 bytes): "but Rank 000...0714331860": the
  // rank is out of range and dropped, and ranks 0-65,535 were still claimed
  // to agree with rank 0 (1.9 s, 195 MB for one line).
  std::string line = kCDetailRank0;
  line.replace(line.find("but Rank 2 "), 11, "but Rank 000000714331860 ");
  auto d = Parse(line, 0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 0);
  EXPECT_EQ(d[0].ops.size(), 1u);
}

TEST(TorchLog, DetailMismatchOwnReportBeatsOthersAndSubgroupsStayLocal) {
  // Rank 2's own line says broadcast [4]; rank 0's line (read first) claims
  // rank 2 runs broadcast [8]: the rank's own report wins.
  auto d = Parse(
      "Detected mismatch between collectives on ranks. Rank 0 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[8], TensorDtypes=Float), but Rank 2 "
      "is running collective: CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, TensorShape=[8], "
      "TensorDtypes=Float).\n"
      "Detected mismatch between collectives on ranks. Rank 2 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, TensorShape=[4], TensorDtypes=Float), but Rank 0 "
      "is running collective: CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[8], "
      "TensorDtypes=Float).\n"
      // A sub-group: global rank 5 is rank 1 of the checked pg: the other
      // rank cannot be placed, rank 5's own fingerprint is its op of a pg
      // whose name is unknown.
      "[rank5]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=3, OpType=ALLGATHER), but Rank 0 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=3, OpType=BARRIER).\n",
      -1);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[2].rank, 2);
  ASSERT_EQ(d[2].ops.size(), 1u);
  EXPECT_EQ(*d[2].ops[0].input_sizes, (model::Shapes{{4}}));
  EXPECT_EQ(d[2].ops[0].collective_seq, 8);
  EXPECT_EQ(d[3].rank, 5);
  ASSERT_EQ(d[3].ops.size(), 1u);
  EXPECT_EQ(d[3].ops[0].pg_name, "?");
  EXPECT_EQ(d[3].ops[0].collective_seq, 4);
  EXPECT_EQ(d[3].ops[0].op, "all_gather");
  ASSERT_EQ(d[3].events.size(), 1u);
  EXPECT_EQ(d[3].events[0].kind, model::LogEvent::Kind::kMismatch);
  EXPECT_EQ(d[3].events[0].pg, "?");
  EXPECT_EQ(d[3].events[0].seq, 4);
}

TEST(TorchLog, DetailMismatchOfASubGroupByTheFilesRank) {
  // testdata/torch/c_detail_sub/stderr/rank_1.log, cut: global rank 1 (the
  // file's rank, no [rankN]: prefix) reports itself as "Rank 0": the pg is
  // not the world, so neither its rank 0 nor its rank 2 is a global rank.
  auto d = Parse(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, TensorShape=[8], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)), but Rank 2 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=1, OpType=BROADCAST, TensorShape=[8], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)).\n",
      1);
  ASSERT_EQ(d.size(), 1u);  // nothing of ranks 0 or 2
  EXPECT_EQ(d[0].rank, 1);
  ASSERT_EQ(d[0].ops.size(), 1u);
  const model::OpRecord& op = d[0].ops[0];
  EXPECT_EQ(op.pg_name, "?");
  EXPECT_EQ(op.pg_desc, "sub-group, name unknown");
  EXPECT_EQ(op.collective_seq, 2);  // SequenceNumber=1 counts the ops before it
  EXPECT_EQ(op.backend, "gloo");
  EXPECT_EQ(op.op, "all_reduce");
  EXPECT_EQ(*op.input_sizes, (model::Shapes{{8}}));
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].pg, "?");
  EXPECT_EQ(d[0].events[0].seq, 2);
  EXPECT_EQ(d[0].events[0].peer, -1);  // its "Rank 2" is no global rank
  // The same line in rank 0's file is the default pg's, as before.
  auto world = Parse(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
      "CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, TensorShape=[8], TensorDtypes=Float), but Rank 2 "
      "is running collective: CollectiveFingerPrint(SequenceNumber=1, OpType=BROADCAST, TensorShape=[8], "
      "TensorDtypes=Float).\n",
      0);
  ASSERT_FALSE(world.empty());
  EXPECT_EQ(world[0].rank, 0);
  ASSERT_FALSE(world[0].ops.empty());
  EXPECT_EQ(world[0].ops[0].pg_name, "0");
}

TEST(TorchLog, WatchdogCrashOfVllm6042) {
  auto d = Parse(
      "[rank3]:[E ProcessGroupNCCL.cpp:1414] [PG 2 Rank 3] Process group watchdog thread terminated with exception: "
      "CUDA error: an illegal memory access was encountered\n"
      "  | Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
      -1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 3);
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kCrash);
  EXPECT_EQ(d[0].events[0].pg, "2");
}

TEST(TorchLog, TracebackBecomesStackInnermostFirst) {
  auto d = Parse(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 10, in main\n"
      "    step()\n"
      "  File \"dist.py\", line 20, in all_reduce\n"
      "    work.wait()\n"
      "ValueError: bad batch\n",
      4);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].stacks.size(), 1u);
  ASSERT_EQ(d[0].stacks[0].frames.size(), 2u);
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "all_reduce");
  EXPECT_EQ(d[0].stacks[0].frames[1].line, 10);
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kCrash);
}

TEST(TorchLog, AMonitoredBarriersNonZeroRankErrorIsAConsequence) {
  // The fresh-user tester's mon_barrier, rank 1 (torch 2.13, gloo): rank 2
  // never reached monitored_barrier, rank 0 said so, and rank 1's exchange
  // with rank 0 failed. Rank 1's exception ends it because of rank 0's
  // verdict: an exit brought on by the barrier, not a crash of its own.
  auto d = Parse(
      "Traceback (most recent call last):\n"
      "  File \"case.py\", line 7, in body\n"
      "    dist.monitored_barrier(timeout=datetime.timedelta(seconds=6))\n"
      "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
      "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n",
      1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kExit);
}

TEST(TorchLog, AnExceptionInAThreadEndsThatThreadNotTheProcess) {
  // testdata/torch/thread_crash/stderr/rank_1.log (CPython 3.11's
  // threading.excepthook), a log line between, then a traceback of the main
  // thread: only the last is the process's crash.
  auto d = Parse(
      "[hangdx-fi rank 1 1796233259.511] step 2: waiting for a batch\n"
      "Exception in thread loader:\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 1045, in _bootstrap_inner\n"
      "    self.run()\n"
      "  File \"/opt/train/scenarios.py\", line 424, in run\n"
      "    raise _BadShard(\"cannot decode record %d of shard 7 (truncated)\" % (16 * i))\n"
      "scenarios._BadShard: cannot decode record 32 of shard 7 (truncated)\n"
      "[hangdx-fi rank 1 1796233270.805] dumped flight recorder\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 10, in main\n"
      "ValueError: bad batch\n",
      1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].events.size(), 2u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kThreadError);
  EXPECT_EQ(d[0].events[0].thread, "loader");
  EXPECT_EQ(d[0].events[0].message, "scenarios._BadShard: cannot decode record 32 of shard 7 (truncated)");
  EXPECT_EQ(d[0].events[0].line, 8);
  EXPECT_EQ(d[0].events[1].kind, model::LogEvent::Kind::kCrash);
  EXPECT_EQ(d[0].events[1].thread, "");
  ASSERT_EQ(d[0].stacks.size(), 2u);
  EXPECT_EQ(d[0].stacks[0].thread, "loader");
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "run");
  EXPECT_EQ(d[0].stacks[1].thread, "traceback");
}

TEST(TorchLog, AChainedExceptionOfAThreadIsStillThatThreads) {
  // Python prints the cause first, then "During handling ..." and the
  // exception that ended the thread; a timeout the thread's collective
  // raised stays a timeout's exit, whatever thread raised it.
  auto d = Parse(
      "Exception in thread Thread-3 (upload):\n"
      "Traceback (most recent call last):\n"
      "  File \"up.py\", line 3, in upload\n"
      "KeyError: 'host'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"up.py\", line 5, in upload\n"
      "ConnectionError: refused\n"
      "Exception in thread comm:\n"
      "Traceback (most recent call last):\n"
      "  File \"dist.py\", line 20, in all_reduce\n"
      "RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 4000ms for recv operation to "
      "complete\n",
      2);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].events.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ(d[0].events[i].kind, model::LogEvent::Kind::kThreadError) << i;
    EXPECT_EQ(d[0].events[i].thread, "Thread-3 (upload)") << i;
  }
  EXPECT_EQ(d[0].events[1].message, "ConnectionError: refused");
  EXPECT_EQ(d[0].events[2].kind, model::LogEvent::Kind::kExit);
  EXPECT_EQ(d[0].events[2].thread, "comm");
}

TEST(TorchLog, FaulthandlersFatalErrorIsACrashBySignal) {
  // testdata/torch/all_segv/stderr/rank_2.log (CPython 3.11 faulthandler,
  // Modules/faulthandler.c): the report alone makes the file a torch-log,
  // and its name gives the signal.
  std::string text =
      "rank 2/4 pid 5975 started\n"
      "Fatal Python error: Segmentation fault\n\n"
      "Current thread 0x00007fd273a1bb80 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"
      "  File \"/opt/train/train.py\", line 15 in <module>\n";
  EXPECT_GT(SniffTorchLog(text), 0);
  auto d = Parse(text, 2);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].events.size(), 1u);
  EXPECT_EQ(d[0].events[0].kind, model::LogEvent::Kind::kCrash);
  EXPECT_EQ(d[0].events[0].signal, 11);
  for (auto [name, sig] : {std::pair{"Bus error", 7}, {"Illegal instruction", 4}, {"Floating point exception", 8},
                           {"Floating-point exception", 8}, {"Aborted", 6}}) {
    auto e = Parse(std::string("Fatal Python error: ") + name + "\n", 0);
    ASSERT_EQ(e.size(), 1u) << name;
    EXPECT_EQ(e[0].events.at(0).signal, sig) << name;
  }
  // Another fatal error (not a signal) is a crash without a signal.
  auto other = Parse("Fatal Python error: PyThreadState_Get: no current thread\n", 0);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].events.at(0).signal, -1);
}

}  // namespace
}  // namespace hangdx::ingest
