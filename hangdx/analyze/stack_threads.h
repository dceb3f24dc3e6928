// hangdx/analyze/stack_threads.h
// What one thread's stack says about its rank, and which of a rank's
// threads speaks for it. A stack dump (py-spy, gdb, faulthandler) holds every
// thread of the process: the main thread, the autograd engine, and helpers
// that only wait (a pin-memory or data-loader thread, a heartbeat asleep in
// threading.py's wait, a reader blocked in multiprocessing's
// Connection.recv). The rank is where its thread inside a collective is; an
// idle helper says nothing about it.
//
//   CollectiveCall c = CollectiveIn(stack);   // {op "all_reduce", frame 0, ddp_backward false}
//   const model::StackSample* s = SpeakingThread(dump);
#pragma once

#include <string>

#include "hangdx/model/job.h"

namespace hangdx::analyze {

// Where a stack is in a torch.distributed collective or P2P call.
struct CollectiveCall {
  std::string op;  // "all_reduce", "broadcast_object_list", ...; "" when in none
  int frame = -1;  // index (innermost first) of the frame that names it; -1 when in none
  // In DDP's backward: the autograd engine running loss.backward(), where
  // DistributedDataParallel's Reducer launches the gradient all_reduce of
  // each bucket and waits for them (op is then "all_reduce").
  bool ddp_backward = false;
  bool found() const { return frame >= 0; }
  // A point-to-point call: send, recv, isend, irecv, batch_isend_irecv.
  bool p2p() const;
  // send or isend.
  bool sends() const { return op == "send" || op == "isend"; }
  // "all_reduce", or "DDP backward (gradient all_reduce)".
  std::string Words() const;
};

// True when frame `f` is a torch.distributed collective or P2P entry point
// (all_reduce, broadcast, barrier, send, recv, broadcast_object_list, ...):
// its name is one, and its file, when known, is not one where those names
// mean something else (Python's multiprocessing, socket, asyncio and
// threading modules; a shared library such as libc's recv).
bool IsCollectiveFrame(const model::Frame& f);

// True when frame `f` is the autograd engine running a backward pass:
// torch/autograd/graph.py _engine_run_backward (PyTorch 2.2+), the
// backward / grad of torch/autograd/__init__.py that call the engine
// (older releases; still the caller's frames now), or a native frame of
// c10d::Reducer (DDP's gradient reducer: autograd_hook,
// mark_variable_ready, finalize_backward, ... in py-spy --native or gdb).
bool IsBackwardFrame(const model::Frame& f);

// The collective `st` is in: its outermost collective frame
// (broadcast_object_list rather than the broadcast it calls); else its
// outermost native c10d frame that runs one (gdb: a gloo worker thread in
// c10d::AsyncAllreduceWork::allreduce is in "all_reduce", a thread in
// c10d::ProcessGroupNCCL::broadcast in "broadcast"); else, when it
// is in a backward pass (IsBackwardFrame), DDP's gradient all_reduce at the
// outermost such frame; else none.
CollectiveCall CollectiveIn(const model::StackSample& st);

// True when `st` is a thread started by Python's threading module (its
// outermost frame is threading.py's _bootstrap or _bootstrap_inner): a
// helper, never the main thread.
bool IsStartedThread(const model::StackSample& st);

// True when `st` is the process's main thread, as far as its dump says: py-spy
// names it "MainThread"; gdb numbers it Thread 1; a Python stack whose
// outermost frame is not threading's bootstrap (faulthandler prints no
// thread names) and runs Python code.
bool IsMainThread(const model::StackSample& st);

// The thread that speaks for rank dump `d`: the first thread in a
// collective or DDP backward (the main thread first when several are);
// else the main thread; else faulthandler's "Current thread" when it is not
// a helper started by threading; else the first thread that is no such
// helper; else the first thread. A thread that died of an uncaught exception
// (its traceback in a log, LogEvent::kThreadError) never speaks: it is gone.
// nullptr when `d` has no other stack with frames.
const model::StackSample* SpeakingThread(const model::RankDump& d);

}  // namespace hangdx::analyze
