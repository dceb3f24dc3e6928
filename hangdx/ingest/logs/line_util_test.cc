#include "hangdx/ingest/logs/line_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace hangdx::ingest::logs {
namespace {

std::string_view Peel(std::string_view s, int64_t* rank, int64_t* local) {
  *rank = *local = -1;
  return PeelPrefixes(s, rank, local);
}

TEST(LineUtil, PeelsForeignPrefixes) {
  int64_t r, lr;
  EXPECT_EQ(Peel("(RayTrainWorker pid=615, ip=10.72.7.6) x NCCL INFO y", &r, &lr), "x NCCL INFO y");
  EXPECT_EQ(Peel("Fri Aug 11 12:31:45 2023[1,3]<stdout>:host:1:1 [0] NCCL INFO z", &r, &lr),
            "host:1:1 [0] NCCL INFO z");
  EXPECT_EQ(r, 3);
  EXPECT_EQ(Peel("2025-11-24T03:20:21.001125857Z [rank3]:[E ProcessGroupNCCL.cpp:1] m", &r, &lr),
            "[E ProcessGroupNCCL.cpp:1] m");
  EXPECT_EQ(r, 3);
  EXPECT_EQ(Peel("[default5]:hello", &r, &lr), "hello");
  EXPECT_EQ(lr, 5);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(Peel("12: Thread 4 (idle)", &r, &lr), "Thread 4 (idle)");
  EXPECT_EQ(r, 12);
  EXPECT_EQ(Peel("[1803] text", &r, &lr), "text");
  EXPECT_EQ(r, -1);
  // mpirun splitting Horovod's prefix (horovod/horovod#1012): the inner tag is not a prefix.
  EXPECT_EQ(
      Peel("[1,0]<stderr>:[2019-04-13 13:53:31.[1,0]<stderr>:851588: W horovod/common/operations.cc:588] x", &r, &lr),
      "[2019-04-13 13:53:31.[1,0]<stderr>:851588: W horovod/common/operations.cc:588] x");
  EXPECT_EQ(r, 0);
  // horovodrun's own launcher (gloo) tags the rank alone.
  EXPECT_EQ(Peel("[3]<stderr>:Stalled ops:", &r, &lr), "Stalled ops:");
  EXPECT_EQ(r, 3);
  // Not prefixes: c10 severity brackets, PG prefixes.
  EXPECT_EQ(Peel("[E ProcessGroupNCCL.cpp:457] [Rank 3] W", &r, &lr), "[E ProcessGroupNCCL.cpp:457] [Rank 3] W");
}

// Peels with a layout; returns the rest and fills *p.
std::string_view PeelWith(std::string_view s, const TextLayout& layout, LinePrefix* p) {
  *p = LinePrefix{};
  return PeelPrefixes(s, layout, p);
}

// Real lines of docs/field-survey/nccl.md section 7 and frameworks.md
// section 4-5 (URLs there), and of testdata/public.
TEST(LineUtil, PeelsServingFrameworkAndCollectorPrefixes) {
  TextLayout none;
  LinePrefix p;
  // Ray (NVIDIA/nccl#1193, #1591), its dedup suffix and note.
  EXPECT_EQ(
      PeelWith("(RayTrainWorker pid=615, ip=10.72.7.6) r24:615:18953 [2] NCCL INFO AllReduce: opCount 139d", none, &p),
      "r24:615:18953 [2] NCCL INFO AllReduce: opCount 139d");
  EXPECT_EQ(p.rank, -1);
  EXPECT_EQ(PeelWith("(RayWorkerWrapper pid=1019) INFO 01-01 nccl ok [repeated 12x across cluster] (Ray deduplicates "
                     "logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication)",
                     none, &p),
            "INFO 01-01 nccl ok");
  EXPECT_EQ(p.repeated, 12);
  EXPECT_EQ(PeelWith("(raylet) [2024-05-01 10:00:00,000 E 1 1] worker died", none, &p),
            "[2024-05-01 10:00:00,000 E 1 1] worker died");
  // vLLM V1 (frameworks.md section 4; testdata/public/vllm23582, vllm44185).
  EXPECT_EQ(PeelWith("(VllmWorker rank=1 pid=4127) INFO 03-02 08:00:00 [shm_broadcast.py:466] No available", none, &p),
            "INFO 03-02 08:00:00 [shm_broadcast.py:466] No available");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(PeelWith("(VllmWorker TP0 pid=405) INFO 08-25 12:24:19 [multiproc_executor.py:520] Parent process exited",
                     none, &p),
            "INFO 08-25 12:24:19 [multiproc_executor.py:520] Parent process exited");
  EXPECT_EQ(p.tp, 0);
  EXPECT_EQ(p.rank, -1);
  PeelWith("(Worker_PP1_TP0 pid=9) x", none, &p);
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.tp, 0);
  EXPECT_EQ(
      PeelWith("(EngineCore_DP1 pid=1455) INFO 05-28 14:44:28 [shm_broadcast.py:681] No available shared "
               "memory broadcast block found in 60 seconds.",
               none, &p),
      "INFO 05-28 14:44:28 [shm_broadcast.py:681] No available shared memory broadcast block found in 60 seconds.");
  EXPECT_EQ(p.dp, 1);
  PeelWith("(EngineCore_0 pid=271) ERROR 08-25 12:24:19 [multiproc_executor.py:146] Worker proc", none, &p);
  EXPECT_EQ(p.dp, 0);
  // Not a process tag: a parenthesis in text.
  EXPECT_EQ(PeelWith("(most recent call last) x", none, &p), "(most recent call last) x");
  // SGLang (testdata/public/sglang20766), DeepSpeed, NCCL 2.26 WARN timestamps.
  EXPECT_EQ(PeelWith("[2026-03-17 17:31:50 DP12 TP12] Decode batch, #running-req: 12", none, &p),
            "Decode batch, #running-req: 12");
  EXPECT_EQ(p.dp, 12);
  EXPECT_EQ(p.tp, 12);
  PeelWith("[2025-01-01 12:00:00 TP1] Scheduler hit an exception", none, &p);
  EXPECT_EQ(p.tp, 1);
  EXPECT_EQ(p.dp, -1);
  EXPECT_EQ(PeelWith("[2026-03-17 17:31:53] Pyspy dump for PID 10366:", none, &p), "Pyspy dump for PID 10366:");
  EXPECT_EQ(PeelWith("[2025-03-01 10:11:12] node01:123:456 [0] enqueue.cc:1234 NCCL WARN x", none, &p),
            "node01:123:456 [0] enqueue.cc:1234 NCCL WARN x");
  // Horovod's glog prefix stays: its rows read it.
  EXPECT_EQ(PeelWith("[2019-04-13 13:55:31.858119: W horovod/common/operations.cc:588] x", none, &p),
            "[2019-04-13 13:55:31.858119: W horovod/common/operations.cc:588] x");
  // docker compose (vllm-project/vllm#25605; testdata/public/openseq2seq456), a runner's stream tag
  // (testdata/public/milabench269), web viewers (modelscope/ms-swift#7992), markdown quotes.
  EXPECT_EQ(PeelWith("vllm1-1  | INFO 09-01 engine started", none, &p), "INFO 09-01 engine started");
  EXPECT_EQ(PeelWith("1469.worker.1  | [2019-06-04T16:49:20Z] [2019-06-04 16:49:19.737850: W horovod/common/"
                     "operations.cc:588] One or more tensors",
                     none, &p),
            "[2019-06-04 16:49:19.737850: W horovod/common/operations.cc:588] One or more tensors");
  EXPECT_EQ(PeelWith("dinov2-giant-nodes.node04 [stderr] [rank14]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] "
                     "[Rank 14] Watchdog",
                     none, &p),
            "[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 14] Watchdog");
  EXPECT_EQ(p.rank, 14);
  EXPECT_EQ(PeelWith("18:11:06.680 [rank3]:[E ProcessGroupNCCL.cpp:1] m", none, &p), "[E ProcessGroupNCCL.cpp:1] m");
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(PeelWith("> [rank2]:[E ProcessGroupNCCL.cpp:1] m", none, &p), "[E ProcessGroupNCCL.cpp:1] m");
  EXPECT_EQ(p.rank, 2);
  // SimpleTuner (testdata/public/simpletuner2712), torch_npu 7.2 (vllm-project/vllm-ascend#4972).
  EXPECT_EQ(PeelWith("[RANK 1] 2026-05-19 10:10:29,701 [ERROR] GPU circuit breaker OPEN", none, &p),
            "2026-05-19 10:10:29,701 [ERROR] GPU circuit breaker OPEN");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(PeelWith("[rank:6]:[198748] [2025-03-26 13:49:01:670] torch_npu: [ERROR] [198800] HCCL timeout", none, &p),
            "torch_npu: [ERROR] [198800] HCCL timeout");
  EXPECT_EQ(p.rank, 6);  // the "[198748] " after it is the pid, not a rank
}

TEST(LineUtil, AmbiguousTagsFollowTheFileLayout) {
  LinePrefix p;
  // MPICH -prepend-rank (NVIDIA/nccl#1232): ranks repeat.
  std::string mpich =
      "[0] node0:1:1 [0] NCCL INFO a\n[1] node1:2:2 [0] NCCL INFO a\n[0] node0:1:1 [0] NCCL INFO b\n"
      "[1] node1:2:2 [0] NCCL INFO b\n[0] node0:1:1 [0] NCCL INFO c\n[1] node1:2:2 [0] NCCL INFO c\n";
  TextLayout ranks = DetectLayout(mpich);
  EXPECT_TRUE(ranks.bracket_ranks);
  EXPECT_FALSE(ranks.numbered);
  EXPECT_EQ(PeelWith("[1] node1:2:2 [0] NCCL INFO b", ranks, &p), "node1:2:2 [0] NCCL INFO b");
  EXPECT_EQ(p.rank, 1);
  // tee'd line numbers (hiyouga/LlamaFactory#8261): count up, never ranks.
  std::string numbered = "[1741] step 1\n[1742] step 2\n[1743] [rank0]:[E ProcessGroupNCCL.cpp:1] m\n[1744] x\n";
  TextLayout lines = DetectLayout(numbered);
  EXPECT_TRUE(lines.numbered);
  EXPECT_EQ(PeelWith("[1743] [rank0]:[E ProcessGroupNCCL.cpp:1] m", lines, &p), "[E ProcessGroupNCCL.cpp:1] m");
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(PeelWith("[1744] x", lines, &p), "x");
  EXPECT_EQ(p.rank, -1);
  // pdsh (NVIDIA/nccl#1029, EleutherAI/gpt-neox#969): the hosts that start the lines.
  std::string pdsh =
      "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19488:21063 [4] NCCL INFO Channel 00\n"
      "rdma-gpu-train-worker-1: rdma-gpu-train-worker-1:19490:21065 [4] NCCL INFO Channel 00\n"
      "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19488:21063 [4] NCCL INFO Channel 01\n"
      "RuntimeError: not a host\n"
      "rdma-gpu-train-worker-1: rdma-gpu-train-worker-1:19490:21065 [4] NCCL INFO Channel 01\n";
  TextLayout hosts = DetectLayout(pdsh);
  ASSERT_EQ(hosts.hosts.size(), 2u);
  EXPECT_EQ(
      PeelWith("rdma-gpu-train-worker-1: rdma-gpu-train-worker-1:19490:21065 [4] NCCL INFO Channel 01", hosts, &p),
      "rdma-gpu-train-worker-1:19490:21065 [4] NCCL INFO Channel 01");
  EXPECT_EQ(PeelWith("RuntimeError: not a host", hosts, &p), "RuntimeError: not a host");
  EXPECT_TRUE(DetectLayout("RuntimeError: a\nValueError: b\nRuntimeError: c\n").hosts.empty());
}

// Reads a file of the repository (tests run from the build tree).
std::string ReadTestFile(const std::string& rel) {
  std::ifstream f(std::string(HANGDX_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> AllLines(std::string_view data) {
  std::vector<std::string> out;
  LineReader r(data);
  for (Line l; r.Next(&l);) out.emplace_back(l.text);
  return out;
}

// A terminal paste cut at 137 columns, inside words ('OpTy' / 'pe=BROADCAST').
TEST(LineUtil, JoinsTerminalWrappedLines) {
  std::string data = ReadTestFile("testdata/public/openr1-620-grpo-broadcast-rank0-absent/job.log");
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(DetectLayout(data).wrap_width, 137u);
  std::vector<std::string> lines = AllLines(data);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_NE(lines[0].find("NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds"),
            std::string::npos);
  EXPECT_NE(lines[1].find("WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112"), std::string::npos);
  LineReader r(data);
  Line l;
  ASSERT_TRUE(r.Next(&l));
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.number, 3);  // physical line numbers stay
  EXPECT_EQ(l.joined, 2);
}

// A job runner that broke lines at about 151 columns at word boundaries,
// keeping the space, and one longer line broken before a word.
TEST(LineUtil, JoinsRunnerWrappedLines) {
  std::string data = ReadTestFile("testdata/public/milabench269-seq2070-reduce-vs-allreduce-across-nodes/node04.log");
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(DetectLayout(data).wrap_width, 151u);
  std::vector<std::string> lines = AllLines(data);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("operation timeout: WorkNCCL(SeqNum=2070, OpType=REDUCE"), std::string::npos);
  EXPECT_NE(lines[4].find("detected by watchdog at work: 2070, last enqueued NCCL work: 2070"), std::string::npos);
  std::string node03 = ReadTestFile("testdata/public/milabench269-seq2070-reduce-vs-allreduce-across-nodes/node03.log");
  bool joined = false;
  for (const auto& l : AllLines(node03))
    joined =
        joined || l.find("watchdog thread terminated with exception: [Rank 6] Watchdog caught") != std::string::npos;
  EXPECT_TRUE(joined);
}

// A log whose lines merely have equal lengths (NCCL Channel lines) is not wrapped.
TEST(LineUtil, EqualLengthsAreNotAWrap) {
  std::string data;
  for (int i = 0; i < 40; ++i)
    data += "node01:4711:4790 [0] NCCL INFO Channel " + std::string(i < 10 ? "0" : "") + std::to_string(i) +
            "/0 : 0[0] -> 1[1] via P2P/IPC/read\n";
  EXPECT_EQ(DetectLayout(data).wrap_width, 0u);
  EXPECT_EQ(AllLines(data).size(), 40u);
}

// `gdb -batch -ex "thread apply all bt"` of a gloo rank (torch 2.13, the
// fresh-user tester's gdb_sleep): thread headers of one length, each
// followed by "#0", a start no other line has, and long frame lines. Not a
// wrap: its frames were joined into a few lines, and the rank's gloo
// worker in c10d::AsyncAllreduceWork::allreduce was lost.
TEST(LineUtil, GdbThreadHeadersOfOneLengthAreNotAWrap) {
  std::string data;
  for (int t = 4; t >= 1; --t) {
    data += "\nThread " + std::to_string(t) + " (Thread 0x7f34a163c6c" + std::to_string(t) + " (LWP 2137" +
            std::to_string(t) + ") \"pt_gloo_runloop\"):\n";
    data += "#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, "
            "futex_word=0x557af81d8630) at ./nptl/futex-internal.c:57\n";
    for (int f = 1; f <= 11; ++f)
      data += "#" + std::to_string(f) + (f < 10 ? "  " : " ") + "0x00007f34ac112501 in c10d::ProcessGroupGloo::" +
              "runLoop(int) () from /opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so\n";
  }
  EXPECT_EQ(DetectLayout(data).wrap_width, 0u);
  EXPECT_EQ(AllLines(data).size(), 4u * 14);
}

// One message printed by several processes, after a longer line of
// another: lines of one width, each starting like the one before it. Not a
// wrap (testdata/public/vllm23582 was read as one line, so its TP prefixes
// were never seen and the dead worker's rank was unknown).
TEST(LineUtil, OneMessageOfSeveralProcessesIsNotAWrap) {
  std::string data = ReadTestFile("testdata/public/vllm23582-vllmworker1-died-unexpectedly/job.log");
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(DetectLayout(data).wrap_width, 0u);
  EXPECT_EQ(AllLines(data).size(), 10u);
}

// torchrun's failure summary draws its sections with rules of 60 '=' and
// '-': seven lines of one width, each followed by a line unlike any start.
// A rule is a whole line, not a cut (the tester's os._exit(3) run: the rule
// was joined to "Root Cause (first observed failure):", which then matched
// no row and the failing rank was lost).
TEST(LineUtil, RulesAreNotAWrap) {
  std::string data = ReadTestFile("testdata/torch/torchrun_os_exit/combined.log");
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(DetectLayout(data).wrap_width, 0u);
  size_t root = 0;
  for (const std::string& l : AllLines(data)) root += l == "Root Cause (first observed failure):";
  EXPECT_EQ(root, 1u);
}

TEST(LineUtil, CleansAnsiAndCarriageReturns) {
  std::string buf;
  EXPECT_EQ(CleanLine("10%\r50%\r\x1b[1;32mThread 1 (active)\x1b[0m  \r", &buf), "Thread 1 (active)");
  LineReader r("a\r\n\nb");
  Line l;
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "a");
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "");
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "b");
  EXPECT_EQ(l.number, 3);
  EXPECT_EQ(l.offset, 4);
  EXPECT_FALSE(r.Next(&l));
}

TEST(LineUtil, NumbersNeverThrow) {
  int64_t v;
  EXPECT_TRUE(ParseHex("1a", &v));
  EXPECT_EQ(v, 26);
  EXPECT_TRUE(ParseHex("0x139d", &v));
  EXPECT_EQ(v, 0x139d);
  EXPECT_FALSE(ParseHex("ffffffffffffffffff", &v));
  EXPECT_FALSE(ParseDec("18446744073709551615", &v));
  EXPECT_FALSE(ParseDec("", &v));
  EXPECT_EQ(NcclDtypeName(6), "Half");
  EXPECT_EQ(NcclDtypeName(4), "Long");
  EXPECT_EQ(NcclDtypeName(99), "");
}

TEST(LineUtil, LongLinesAreCut) {
  std::string s(kMaxLineBytes * 2, 'x');
  LineReader r(s);
  Line l;
  ASSERT_TRUE(r.Next(&l));
  EXPECT_TRUE(l.truncated);
  EXPECT_EQ(l.text.size(), kMaxLineBytes);
  EXPECT_EQ(r.truncated_lines(), 1);
}

TEST(DecodeText, NulPaddingIsNotBinary) {
  std::string text;
  EXPECT_EQ(DecodeText("a NCCL INFO line\n", &text), TextEncoding::kText);
  // A crashed process's log: trailing NULs, and a run inside.
  std::string padded("line 1\n\0\0line 2\n\0\0\0\0", 19);
  EXPECT_EQ(DecodeText(padded, &text), TextEncoding::kNulPadded);
  EXPECT_EQ(text, "line 1\nline 2\n");
  // NULs only past the head.
  std::string long_log(5000, 'x');
  long_log += std::string(3, '\0');
  EXPECT_EQ(DecodeText(long_log, &text), TextEncoding::kNulPadded);
  EXPECT_EQ(text, std::string(5000, 'x'));
  // All NULs, or NULs among control bytes: binary.
  EXPECT_EQ(DecodeText(std::string(64, '\0'), &text), TextEncoding::kBinary);
  EXPECT_EQ(DecodeText(std::string("\x7f"
                                   "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0\x01\0\0\0",
                                   24),
                       &text),
            TextEncoding::kBinary);
  std::string random;
  for (int i = 0; i < 256; ++i) random.push_back(static_cast<char>((i * 167 + 13) & 0xff));
  EXPECT_EQ(DecodeText(random, &text), TextEncoding::kBinary);
}

TEST(DecodeText, Utf16) {
  std::string text;
  // BOM FF FE (little endian), a non-ASCII unit as '?'.
  EXPECT_EQ(DecodeText(std::string("\xff\xfe"
                                   "a\0b\0\xe9\0\n\0",
                                   10),
                       &text),
            TextEncoding::kUtf16);
  EXPECT_EQ(text, "ab?\n");
  EXPECT_EQ(DecodeText(std::string("\xfe\xff\0a\0b\0\n", 8), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "ab\n");
  // No BOM: every other byte NUL.
  EXPECT_EQ(DecodeText(std::string("N\0C\0C\0L\0\n\0", 10), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "NCCL\n");
  EXPECT_EQ(DecodeText(std::string("\0N\0C\0C\0L\0\n", 10), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "NCCL\n");
}

TEST(LineUtil, LineTimeNs) {
  constexpr int64_t kS = 1000000000;
  // kubectl --timestamps, with nanoseconds.
  EXPECT_EQ(LineTimeNs("2025-11-24T03:20:21.001125857Z [rank0]: x"), 1763954421 * kS + 1125857);
  // Horovod's bracketed stamp after an mpirun tag; Python logging's comma.
  EXPECT_EQ(LineTimeNs("[1,0]<stderr>:[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] x"),
            1555163611 * kS + 851506000);
  EXPECT_EQ(LineTimeNs("2024-01-01 00:00:00,5 - INFO - x"), 1704067200 * kS + 500000000);
  // An offset is UTC's.
  EXPECT_EQ(LineTimeNs("2024-01-01T01:00:00+01:00 x"), 1704067200 * kS);
  // No year, no stamp, a date alone: unknown.
  EXPECT_EQ(LineTimeNs("I1114 16:43:23.344583 1233050 x.cc:1] y"), 0);
  EXPECT_EQ(LineTimeNs("INFO 07-26 10:12:01 shm_broadcast.py:404] No available block"), 0);
  EXPECT_EQ(LineTimeNs("released 2024-01-01"), 0);
  EXPECT_EQ(LineTimeNs(""), 0);
}

// Members from c10d's counts: an all_gather of 4 x 256 elements has 4, a
// reduce_scatter of 1,024 into 128 has 8; what does not divide, a gather's
// non-root side (NumelOut 0), unknown counts and other ops say nothing.
TEST(LineUtil, MembersBySizes) {
  EXPECT_EQ(MembersBySizes("all_gather", 256, 1024), 4);
  EXPECT_EQ(MembersBySizes("_allgather_base", 16000, 32000), 2);
  EXPECT_EQ(MembersBySizes("gather", 16000, 32000), 2);
  EXPECT_EQ(MembersBySizes("gather", 16000, 0), 0);
  EXPECT_EQ(MembersBySizes("_reduce_scatter_base", 1024, 128), 8);
  EXPECT_EQ(MembersBySizes("reduce_scatter", 128, 1024), 0);
  EXPECT_EQ(MembersBySizes("all_gather", 300, 1000), 0);
  EXPECT_EQ(MembersBySizes("all_gather", -1, 1024), 0);
  EXPECT_EQ(MembersBySizes("all_reduce", 256, 1024), 0);
  EXPECT_EQ(MembersBySizes("all_gather", 1, int64_t{1} << 40), 0);  // past kMaxRank: no pg that large
}

}  // namespace
}  // namespace hangdx::ingest::logs
