#include "hangdx/analyze/stack_threads.h"

#include <gtest/gtest.h>

namespace hangdx::analyze {
namespace {

using model::Frame;
using model::StackSample;

// Frames as the real dumps of testdata/torch/ddp_uneven and b_threads print
// them (faulthandler: full paths; py-spy: qualified names, short paths).
const char* kThreading = "/home/.pyenv/versions/3.11.7/lib/python3.11/threading.py";
const char* kConnection = "/home/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/connection.py";
const char* kSite = "/opt/conda/envs/train/lib/python3.11/site-packages/";

StackSample Sample(std::string thread, std::vector<Frame> innermost_first) {
  StackSample s;
  s.thread = std::move(thread);
  s.frames = std::move(innermost_first);
  return s;
}

std::vector<Frame> Bootstrap() {
  return {{"run", kThreading, 982}, {"_bootstrap_inner", kThreading, 1045}, {"_bootstrap", kThreading, 1002}};
}

std::vector<Frame> With(std::vector<Frame> inner, const std::vector<Frame>& outer) {
  inner.insert(inner.end(), outer.begin(), outer.end());
  return inner;
}

// faulthandler's control-channel helper of b_threads: multiprocessing's
// Connection.recv is named `recv`, as torch.distributed.recv is.
StackSample ControlChannel() {
  return Sample("Thread 0x00007fac48d386c0", With({{"_recv", kConnection, 395},
                                                   {"_recv_bytes", kConnection, 430},
                                                   {"recv", kConnection, 250},
                                                   {"control_channel", "/opt/train/scenarios.py", 269}},
                                                  Bootstrap()));
}

StackSample Heartbeat() {
  return Sample("Thread 0x00007fac495396c0",
                With({{"wait", kThreading, 331}, {"wait", kThreading, 629}, {"heartbeat", "/opt/train/scenarios.py", 264}},
                     Bootstrap()));
}

StackSample Watchdog() {  // the thread that called faulthandler.dump_traceback
  return Sample("Current thread 0x00007fac49d3a6c0", With({{"watchdog", "/opt/train/worker.py", 128}}, Bootstrap()));
}

StackSample MainInAllReduce() {
  return Sample("Thread 0x00007fac6680eb80", {{"all_reduce", std::string(kSite) + "torch/distributed/distributed_c10d.py", 3252},
                                              {"wrapper", std::string(kSite) + "torch/distributed/c10d_logger.py", 83},
                                              {"step", "/opt/train/scenarios.py", 59},
                                              {"main", "/opt/train/worker.py", 143},
                                              {"<module>", "/opt/train/worker.py", 156}});
}

StackSample MainInBackward() {  // ddp_uneven rank 0, faulthandler
  return Sample("Thread 0x00007f2fa42b0b80", {{"_engine_run_backward", std::string(kSite) + "torch/autograd/graph.py", 979},
                                              {"backward", std::string(kSite) + "torch/autograd/__init__.py", 395},
                                              {"backward", std::string(kSite) + "torch/_tensor.py", 623},
                                              {"sc_ddp_uneven", "/opt/train/scenarios.py", 298},
                                              {"main", "/opt/train/worker.py", 143},
                                              {"<module>", "/opt/train/worker.py", 156}});
}

TEST(IsCollectiveFrame, TorchDistributedNamesCountOthersOfTheSameNameDoNot) {
  EXPECT_TRUE(IsCollectiveFrame({"all_reduce", std::string(kSite) + "torch/distributed/distributed_c10d.py", 3252}));
  EXPECT_TRUE(IsCollectiveFrame({"barrier", "torch/distributed/distributed_c10d.py", 5356}));  // py-spy short path
  EXPECT_TRUE(IsCollectiveFrame({"recv", "", -1}));  // a pasted frame list names no file
  EXPECT_FALSE(IsCollectiveFrame({"recv", kConnection, 250}));
  EXPECT_FALSE(IsCollectiveFrame({"recv", "multiprocessing/connection.py", 250}));  // py-spy short path
  EXPECT_FALSE(IsCollectiveFrame({"recv", "/lib/x86_64-linux-gnu/libc.so.6", -1}));  // gdb's native frame
  EXPECT_FALSE(IsCollectiveFrame({"gather", "/usr/lib/python3.10/asyncio/tasks.py", 700}));
  EXPECT_FALSE(IsCollectiveFrame({"send", "zmq/sugar/socket.py", 696}));
  EXPECT_FALSE(IsCollectiveFrame({"wait", kThreading, 331}));
}

TEST(IsBackwardFrame, EveryReleasesEngineEntryAndTheReducer) {
  EXPECT_TRUE(IsBackwardFrame({"_engine_run_backward", "torch/autograd/graph.py", 979}));
  EXPECT_TRUE(IsBackwardFrame({"_engine_run_backward", "", -1}));
  EXPECT_TRUE(IsBackwardFrame({"backward", "/usr/lib/python3/site-packages/torch/autograd/__init__.py", 197}));
  EXPECT_TRUE(IsBackwardFrame({"grad", "torch/autograd/__init__.py", 303}));
  EXPECT_TRUE(IsBackwardFrame({"Tensor.backward", "torch/_tensor.py", 623}));
  EXPECT_TRUE(IsBackwardFrame({"c10d::Reducer::finalize_backward", "libtorch_cpu.so", -1}));
  EXPECT_TRUE(IsBackwardFrame({"c10d::Reducer::autograd_hook", "", -1}));
  EXPECT_FALSE(IsBackwardFrame({"backward", "/opt/train/model.py", 12}));  // a user's own backward
  EXPECT_FALSE(IsBackwardFrame({"backward", "", -1}));
}

TEST(CollectiveIn, OutermostCollectiveFrameElseDdpBackward) {
  CollectiveCall c = CollectiveIn(MainInAllReduce());
  EXPECT_EQ(c.op, "all_reduce");
  EXPECT_EQ(c.frame, 0);
  EXPECT_FALSE(c.ddp_backward);
  EXPECT_EQ(c.Words(), "all_reduce");

  // The outermost backward frame is Tensor.backward (index 2): its caller is the call site.
  c = CollectiveIn(MainInBackward());
  EXPECT_EQ(c.op, "all_reduce");
  EXPECT_EQ(c.frame, 2);
  EXPECT_TRUE(c.ddp_backward);
  EXPECT_EQ(c.Words(), "DDP backward (gradient all_reduce)");

  EXPECT_FALSE(CollectiveIn(ControlChannel()).found());
  EXPECT_FALSE(CollectiveIn(Heartbeat()).found());

  // A comm hook's explicit all_reduce inside backward names the collective itself.
  StackSample hook = MainInBackward();
  hook.frames.insert(hook.frames.begin(), {"all_reduce", "torch/distributed/distributed_c10d.py", 3252});
  c = CollectiveIn(hook);
  EXPECT_EQ(c.frame, 0);
  EXPECT_FALSE(c.ddp_backward);
}

TEST(CollectiveIn, NativeC10dFrames) {
  // gdb of a gloo rank (testdata/gdb/gloo_sleep, torch 2.13): the worker
  // thread in the work object's method; the class names of the 2.13 wheel.
  const std::string lib = "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so";
  StackSample worker = Sample("Thread 3 (Thread 0x7f34a1e3d6c0 (LWP 21378) \"pt_gloo_runloop\"):",
                              {{"gloo::transport::tcp::UnboundBuffer::waitSend(int*)", lib, 0},
                               {"c10d::AsyncAllreduceWork::allreduce(std::vector<at::Tensor>&)", lib, 0},
                               {"c10d::ProcessGroupGloo::AsyncWork::execute(c10::intrusive_ptr<...> const&)", lib, 0},
                               {"c10d::ProcessGroupGloo::runLoop(int)", lib, 0}});
  CollectiveCall c = CollectiveIn(worker);
  EXPECT_EQ(c.op, "all_reduce");
  EXPECT_EQ(c.frame, 1);
  for (auto [frame, op] : {std::pair{"c10d::(anonymous namespace)::AsyncBroadcastWork::broadcast(at::Tensor&)",
                                     "broadcast"},
                           std::pair{"c10d::(anonymous namespace)::AsyncAlltoallWork::run()", "all_to_all_single"},
                           std::pair{"c10d::(anonymous namespace)::AsyncAllgatherCUDAWork::run()", "all_gather"},
                           std::pair{"c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&)", "all_reduce"},
                           std::pair{"c10d::ProcessGroupNCCL::_allgather_base(at::Tensor&, at::Tensor&)",
                                     "_all_gather_base"},
                           std::pair{"c10d::ProcessGroupGloo::recvAnysource(std::vector<at::Tensor>&, int)", "recv"}}) {
    CollectiveCall n = CollectiveIn(Sample("Thread 2", {{frame, lib, 0}}));
    EXPECT_EQ(n.op, op) << frame;
  }
  // A thread that only runs the loop or waits on a work is in none.
  EXPECT_FALSE(CollectiveIn(Sample("Thread 4", {{"c10d::ProcessGroupGloo::runLoop(int)", lib, 0}})).found());
  EXPECT_FALSE(CollectiveIn(Sample("Thread 1", {{"c10d::Work::wait(std::chrono::milliseconds)", lib, 0}})).found());
  EXPECT_FALSE(
      CollectiveIn(Sample("Thread 4", {{"c10d::ProcessGroupGloo::AsyncWork::execute(...)", lib, 0}})).found());
}

TEST(ThreadKinds, StartedHelpersAndTheMainThread) {
  EXPECT_TRUE(IsStartedThread(Heartbeat()));
  EXPECT_TRUE(IsStartedThread(Watchdog()));
  EXPECT_FALSE(IsStartedThread(MainInAllReduce()));
  EXPECT_TRUE(IsMainThread(MainInAllReduce()));
  EXPECT_FALSE(IsMainThread(Watchdog()));
  EXPECT_TRUE(IsMainThread(Sample("Thread 17795 (idle): \"MainThread\"", {{"barrier", "", -1}})));
  EXPECT_FALSE(IsMainThread(Sample("Thread 18326 (idle): \"heartbeat\"", {{"<module>", "x.py", 1}})));
  EXPECT_TRUE(IsMainThread(Sample("Thread 1 (Thread 0x7f0d2c4e5740 (LWP 61) \"python\")", {{"poll", "", -1}})));
  EXPECT_FALSE(IsMainThread(Sample("Thread 7 (Thread 0x7f0c9bfff640 (LWP 70) \"python\")",
                                   {{"epoll_wait", "/lib/libc.so.6", -1}, {"clone3", "/lib/libc.so.6", -1}})));
}

TEST(SpeakingThread, TheThreadInACollectiveNotTheHelpersListedFirst) {
  // b_threads rank 0 as faulthandler lists it: newest thread first.
  model::RankDump d;
  d.stacks = {ControlChannel(), Heartbeat(), Watchdog(), MainInAllReduce()};
  EXPECT_EQ(SpeakingThread(d), &d.stacks[3]);
}

TEST(SpeakingThread, DdpBackwardSpeaks) {
  model::RankDump d;
  d.stacks = {ControlChannel(), Heartbeat(), Watchdog(), MainInBackward()};
  EXPECT_EQ(SpeakingThread(d), &d.stacks[3]);
}

TEST(SpeakingThread, InNoCollectiveTheMainThreadThenCurrentThenANonHelper) {
  StackSample main_sleeping = Sample("Thread 0x1", {{"sleep_forever", "/opt/train/scenarios.py", 70},
                                                    {"<module>", "/opt/train/worker.py", 156}});
  model::RankDump d;
  d.stacks = {ControlChannel(), Heartbeat(), Watchdog(), main_sleeping};
  EXPECT_EQ(SpeakingThread(d), &d.stacks[3]);

  // No main thread known (native frames only): faulthandler's current
  // thread when threading did not start it, else the first such thread.
  StackSample native_a = Sample("Thread 0x2", {{"epoll_wait", "/lib/libc.so.6", -1}});
  StackSample native_b = Sample("Current thread 0x3", {{"nanosleep", "/lib/libc.so.6", -1}});
  model::RankDump e;
  e.stacks = {Heartbeat(), native_a, native_b};
  EXPECT_EQ(SpeakingThread(e), &e.stacks[2]);
  e.stacks = {Heartbeat(), Watchdog(), native_a};
  EXPECT_EQ(SpeakingThread(e), &e.stacks[2]);

  // Helpers only: the first.
  model::RankDump f;
  f.stacks = {Heartbeat(), Watchdog()};
  EXPECT_EQ(SpeakingThread(f), &f.stacks[0]);
  EXPECT_EQ(SpeakingThread(model::RankDump{}), nullptr);
}

TEST(SpeakingThread, OfSeveralThreadsInCollectivesTheMainThread) {
  StackSample helper_in_barrier =
      Sample("Thread 0x5", With({{"barrier", "torch/distributed/distributed_c10d.py", 5356}}, Bootstrap()));
  model::RankDump d;
  d.stacks = {helper_in_barrier, MainInAllReduce()};
  EXPECT_EQ(SpeakingThread(d), &d.stacks[1]);
}

}  // namespace
}  // namespace hangdx::analyze
