#include "hangdx/ingest/formats/stack_dump/stack_dump.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

std::vector<model::RankDump> Parse(std::string_view text, int64_t hint) {
  return ParseForTest(ParseStackDump, text, hint).dumps;
}

TEST(StackDump, PySpyText) {
  std::string s =
      "Process 14310: /usr/local/bin/python -u sft.py\n"
      "Python v3.11.9 (/usr/local/bin/python3.11)\n\n"
      "Thread 42 (idle): \"MainThread\"\n"
      "    backward (torch/autograd/__init__.py:266)\n"
      "        Arguments:\n"
      "            x: 1\n"
      "    training_loop (src/fine_tune.py:410)\n"
      "Thread 4076 (idle)\n"
      "Thread 4079 (active)\n"
      "    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)\n"
      "    0x7caaa50b1a9b (?)\n";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kPySpy);
  auto d = Parse(s, 5);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rank, 5);
  EXPECT_FALSE(d[0].from_flight_recorder);
  ASSERT_EQ(d[0].stacks.size(), 3u);
  EXPECT_EQ(d[0].stacks[0].thread, "Thread 42 (idle): \"MainThread\"");
  ASSERT_EQ(d[0].stacks[0].frames.size(), 2u);
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "backward");
  EXPECT_EQ(d[0].stacks[0].frames[0].filename, "torch/autograd/__init__.py");
  EXPECT_EQ(d[0].stacks[0].frames[0].line, 266);
  EXPECT_TRUE(d[0].stacks[1].frames.empty());
  EXPECT_EQ(d[0].stacks[2].frames[1].filename, "?");
}

TEST(StackDump, BareFramesOfSglang27489) {
  auto d = Parse("all_reduce\nwriting_check\ncheck_hicache_events\nget_new_batch_prefill_raw\nevent_loop_overlap\n", 0);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].stacks.size(), 1u);
  EXPECT_EQ(d[0].stacks[0].frames.size(), 5u);
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "all_reduce");
  EXPECT_EQ(SniffStackFormat("hello\nworld\n"), StackFormat::kNone);  // names no c10d call
}

TEST(StackDump, Gdb) {
  std::string s =
      "Thread 10 (Thread 0x7f535e7fb000 (LWP 500879)):\n"
      "#0  futex_wait_cancelable (private=<optimized out>, expected=0, futex_word=0x7f5) at "
      "../sysdeps/nptl/futex-internal.h:183\n"
      "#3  0x00007f539f454740 in ncclProxyGetPostedOps (added=<synthetic pointer>, proxyState=0x55d) at proxy.cc:713\n"
      "Thread 4 (Thread 0x7fd09a759000 (LWP 3913167) \"cuda00006000019\"):\n"
      "#0  0x00007fd0b01abac1 in poll () from /lib64/libc.so.6\n";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kGdb);
  auto d = Parse(s, 1);
  ASSERT_EQ(d[0].stacks.size(), 2u);
  EXPECT_FALSE(d[0].from_flight_recorder);
  EXPECT_EQ(d[0].stacks[0].frames[1].name, "ncclProxyGetPostedOps");
  EXPECT_EQ(d[0].stacks[0].frames[1].filename, "proxy.cc");
  EXPECT_EQ(d[0].stacks[0].frames[1].line, 713);
  EXPECT_EQ(d[0].stacks[1].frames[0].name, "poll");
  EXPECT_EQ(d[0].stacks[1].frames[0].filename, "/lib64/libc.so.6");
}

TEST(StackDump, GdbBacktracesPastedWithoutAThreadHeader) {
  // NVIDIA/nccl#1013: cuda-gdb `where` after a stray first frame; a second #0 opens a second stack.
  std::string s =
      "#0  0x00007ffff7d23117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "(cuda-gdb) where\n"
      "#0  0x00007ffff7d23117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#2  0x00007fff90dc9f67 in commFree (comm=0x718d9f0) at init.cc:182\n"
      "#3  commCleanup (comm=0x718d9f0) at init.cc:1828\n";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kNone);  // #0 then #2: no backtrace in a row
  s.insert(s.find("#2"), "#1  0x00007ffff7d28624 in ?? () from /lib/x86_64-linux-gnu/libc.so.6\n");
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kGdb);
  auto d = Parse(s, 0);
  ASSERT_EQ(d[0].stacks.size(), 2u);
  EXPECT_EQ(d[0].stacks[0].frames.size(), 1u);
  ASSERT_EQ(d[0].stacks[1].frames.size(), 4u);
  EXPECT_EQ(d[0].stacks[1].frames[2].name, "commFree");
  EXPECT_EQ(d[0].stacks[1].frames[3].name, "commCleanup");
  EXPECT_EQ(d[0].stacks[1].line, 3);
  // eu-stack (NVIDIA/nccl#2353): no address, the argument types glued to the name.
  auto e = Parse("#0  __sched_yield\n#1  ncclLocalOpAppend(ncclComm*, ncclProxyConnector*, ncclProxyOp*)\n", 1);
  ASSERT_EQ(e[0].stacks.size(), 1u);
  EXPECT_EQ(e[0].stacks[0].frames[0].name, "__sched_yield");
  EXPECT_EQ(e[0].stacks[0].frames[1].name.rfind("ncclLocalOpAppend(", 0), 0u);
}

TEST(StackDump, Lldb) {
  // NVIDIA/nccl#788 and pytorch/pytorch#149153 as posted (cut).
  std::string s =
      "  thread #149, name = 'python', stop reason = signal SIGSTOP\n"
      "    frame #0: 0x00007ff4c42944df libcuda.so.1`___lldb_unnamed_symbol5986$$libcuda.so.1 + 175\n"
      "    frame #10: 0x00007ff58df57708 libcudart.so.11.0`cudaEventSynchronize + 344\n"
      "    frame #11: 0x00007ff4468211e1 mpi_lib.cpython-39-x86_64-linux-gnu.so`horovod::common::GPUContext::impl::"
      "WaitForEvents(this=0x0000000005d58400, entries=size=1)> const&) at cuda_operations.cc:124:53\n"
      "* thread #16, name = 'python', stop reason = signal SIGSTOP\n"
      "    frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664\n";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kLldb);
  auto d = Parse(s, 4);
  ASSERT_EQ(d[0].stacks.size(), 2u);
  EXPECT_EQ(d[0].stacks[0].thread, "thread #149, name = 'python', stop reason = signal SIGSTOP");
  ASSERT_EQ(d[0].stacks[0].frames.size(), 3u);
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "___lldb_unnamed_symbol5986$$libcuda.so.1");
  EXPECT_EQ(d[0].stacks[0].frames[1].name, "cudaEventSynchronize");
  EXPECT_EQ(d[0].stacks[0].frames[1].filename, "libcudart.so.11.0");
  EXPECT_EQ(d[0].stacks[0].frames[2].name, "horovod::common::GPUContext::impl::WaitForEvents");
  EXPECT_EQ(d[0].stacks[0].frames[2].filename, "cuda_operations.cc");
  EXPECT_EQ(d[0].stacks[0].frames[2].line, 124);
  EXPECT_EQ(d[0].stacks[1].frames[0].name, "c10d::ProcessGroupNCCL::abort");
  // PyTorch's own C++ backtrace lines ("frame #0: c10::Error::Error(...) + 0x96 (0x7f.. in libc10.so)") are not lldb.
  EXPECT_EQ(SniffStackFormat("frame #0: c10::Error::Error(c10::SourceLocation) + 0x96 (0x7f1 in /x/libc10.so)\n"),
            StackFormat::kNone);
}

TEST(StackDump, PySpyAsPostedWithoutThreadIdOrHeaders) {
  // sglang#33642: the thread id left out; sglang#35822: two bare frames, each with its file and line.
  auto d = Parse(
      "Thread (active): \"MainThread\"\n    cuModuleLoadData (libcuda.so.590.48.01)\n"
      "    _init_handles (triton/compiler/compiler.py:466)\n",
      0);
  ASSERT_EQ(d[0].stacks.size(), 1u);
  EXPECT_EQ(d[0].stacks[0].frames[0].name, "cuModuleLoadData");
  std::string bare =
      "tree_speculative_sampling_target_only (sgl_kernel/speculative.py:36)\neagle_sample (eagle_utils.py:806)\n";
  EXPECT_EQ(SniffStackFormat(bare), StackFormat::kBareFrames);
  EXPECT_EQ(Parse(bare, 1)[0].stacks[0].frames[1].name, "eagle_sample");
  EXPECT_EQ(SniffStackFormat("see (the docs)\nand (more:later)\n"), StackFormat::kNone);  // no line numbers
}

TEST(StackDump, Faulthandler) {
  std::string s =
      "Thread 0x00007f3b6d7fe700 (most recent call first):\n"
      "  File \"/usr/lib/python3.10/threading.py\", line 320 in wait\n"
      "Current thread 0x00007f3b7d7fe700 (most recent call first):\n"
      "  File \"/x/distributed_c10d.py\", line 2050 in all_reduce\n"
      "  File \"train.py\", line 7 in <module>\n";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kFaulthandler);
  auto d = Parse(s, 2);
  ASSERT_EQ(d[0].stacks.size(), 2u);
  EXPECT_FALSE(d[0].from_flight_recorder);
  EXPECT_EQ(d[0].stacks[1].frames[0].name, "all_reduce");
  EXPECT_EQ(d[0].stacks[1].frames[1].name, "<module>");
}

TEST(StackDump, PySpyJson) {
  std::string s = R"([{"pid": 1, "thread_id": 7, "thread_name": "MainThread", "os_thread_id": 42, "active": true,
    "owns_gil": false, "frames": [{"name": "barrier", "filename": "/a/c10d.py", "short_filename": "c10d.py", "line": 9}]}])";
  EXPECT_EQ(SniffStackFormat(s), StackFormat::kPySpyJson);
  auto d = Parse(s, 3);
  ASSERT_EQ(d[0].stacks.size(), 1u);
  EXPECT_EQ(d[0].stacks[0].thread, "Thread 42 (active): \"MainThread\"");
  EXPECT_EQ(d[0].stacks[0].frames[0].filename, "c10d.py");
  EXPECT_EQ(Parse("[{\"thread_id\": 1, \"frames\": [", 3).size(), 0u);  // truncated: a diagnostic
}

}  // namespace
}  // namespace hangdx::ingest
