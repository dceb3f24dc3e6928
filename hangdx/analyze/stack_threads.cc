#include "hangdx/analyze/stack_threads.h"

#include <set>
#include <string_view>

namespace hangdx::analyze {

namespace {

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// True when `path` is the module `file` ("socket.py") or lies in the package
// `dir` ("multiprocessing/"), whether printed in full (faulthandler, gdb's
// py-bt) or relative to its sys.path entry (py-spy's short filenames).
bool IsModule(std::string_view path, std::string_view name) {
  if (name.back() == '/') return path.substr(0, name.size()) == name || path.find("/" + std::string(name)) != path.npos;
  return path == name || EndsWith(path, "/" + std::string(name));
}

// Files where a collective's name means something else: Python's own
// modules of pipes, sockets, queues and threads (Connection.recv,
// socket.send, asyncio.gather), pyzmq's sockets, and shared libraries
// (libc's recv and send in gdb's native frames).
bool NotACollectiveHome(std::string_view file) {
  if (file.find(".so") != file.npos) return true;
  for (std::string_view m : {"multiprocessing/", "asyncio/", "concurrent/", "http/", "xmlrpc/", "zmq/", "socket.py",
                             "ssl.py", "selectors.py", "socketserver.py", "threading.py", "queue.py", "subprocess.py",
                             "smtplib.py", "ftplib.py"})
    if (IsModule(file, m)) return true;
  return false;
}

// The collective a native c10d frame runs (gdb, py-spy --native), "" for
// none. Two kinds: the work object a gloo worker thread runs (ProcessGroupGloo.cpp,
// torch 2.x: c10d::AsyncAllreduceWork::allreduce, c10d::(anonymous
// namespace)::AsyncBroadcastWork::broadcast, their CUDA forms; class names
// read from libtorch_cpu.so of the 2.13 wheel), which is where a rank blocked in
// a gloo collective is (its main thread only waits in c10d::Work::wait), and
// a backend's entry point (c10d::ProcessGroupNCCL::allreduce, ...), the
// method names of c10d::Backend.
std::string NativeCollective(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kGlooWork[] = {
      {"AllreduceCoalesced", "all_reduce_coalesced"}, {"SparseAllreduce", "all_reduce"},
      {"Allreduce", "all_reduce"},                     {"AllgatherCoalesced", "all_gather_coalesced"},
      {"Allgather", "all_gather"},                     {"Broadcast", "broadcast"},
      {"Gather", "gather"},                            {"Scatter", "scatter"},
      {"Reduce", "reduce"},                            {"AlltoallList", "all_to_all"},
      {"Alltoall", "all_to_all_single"},               {"Barrier", "barrier"}};
  static const std::pair<std::string_view, std::string_view> kBackend[] = {
      {"allreduce", "all_reduce"},
      {"allreduce_coalesced", "all_reduce_coalesced"},
      {"broadcast", "broadcast"},
      {"reduce", "reduce"},
      {"allgather", "all_gather"},
      {"_allgather_base", "_all_gather_base"},
      {"allgather_coalesced", "all_gather_coalesced"},
      {"allgather_into_tensor_coalesced", "all_gather_into_tensor"},
      {"gather", "gather"},
      {"scatter", "scatter"},
      {"reduce_scatter", "reduce_scatter"},
      {"_reduce_scatter_base", "_reduce_scatter_base"},
      {"reduce_scatter_tensor_coalesced", "reduce_scatter_tensor"},
      {"alltoall_base", "all_to_all_single"},
      {"alltoall", "all_to_all"},
      {"barrier", "barrier"},
      {"send", "send"},
      {"recv", "recv"},
      {"recvAnysource", "recv"}};
  if (name.rfind("c10d::", 0) != 0) return "";
  // The classes of ProcessGroupGloo.cpp's anonymous namespace print as
  // "c10d::(anonymous namespace)::AsyncBroadcastWork::...": skip that part
  // before cutting the argument list.
  constexpr std::string_view kAnon = "(anonymous namespace)::";
  std::string_view rest = name.substr(6);
  if (rest.rfind(kAnon, 0) == 0) rest.remove_prefix(kAnon.size());
  rest = rest.substr(0, rest.find('('));
  std::string qualified = "c10d::" + std::string(rest);
  name = qualified;
  if (size_t at = name.rfind("::Async"); at != name.npos) {
    std::string_view cls = name.substr(at + 7);
    cls = cls.substr(0, cls.find("::"));
    if (EndsWith(cls, "CUDAWork")) cls.remove_suffix(8);
    else if (EndsWith(cls, "Work")) cls.remove_suffix(4);
    else return "";
    for (const auto& [k, op] : kGlooWork)
      if (cls == k) return std::string(op);
    return "";
  }
  for (std::string_view pg : {"c10d::ProcessGroupGloo::", "c10d::ProcessGroupNCCL::", "c10d::ProcessGroupMPI::",
                              "c10d::ProcessGroupUCC::", "c10d::ProcessGroupHCCL::"}) {
    if (name.rfind(pg, 0) != 0) continue;
    std::string_view method = name.substr(pg.size());
    for (const auto& [k, op] : kBackend)
      if (method == k) return std::string(op);
  }
  return "";
}

}  // namespace

bool CollectiveCall::p2p() const {
  return op == "send" || op == "recv" || op == "isend" || op == "irecv" || op == "batch_isend_irecv";
}

std::string CollectiveCall::Words() const {
  return ddp_backward ? "DDP backward (gradient " + op + ")" : op;
}

bool IsCollectiveFrame(const model::Frame& f) {
  static const std::set<std::string, std::less<>> kOps = {"all_reduce",
                                                          "broadcast",
                                                          "all_gather",
                                                          "all_gather_into_tensor",
                                                          "_all_gather_base",
                                                          "reduce_scatter",
                                                          "reduce_scatter_tensor",
                                                          "_reduce_scatter_base",
                                                          "reduce",
                                                          "gather",
                                                          "scatter",
                                                          "all_to_all",
                                                          "all_to_all_single",
                                                          "barrier",
                                                          "monitored_barrier",
                                                          "send",
                                                          "recv",
                                                          "isend",
                                                          "irecv",
                                                          "batch_isend_irecv",
                                                          "broadcast_object_list",
                                                          "all_gather_object",
                                                          "gather_object",
                                                          "scatter_object_list",
                                                          "all_reduce_coalesced",
                                                          "all_gather_coalesced"};
  return kOps.count(f.name) > 0 && !NotACollectiveHome(f.filename);
}

bool IsBackwardFrame(const model::Frame& f) {
  // DDP's reducer, in native frames (gdb, py-spy --native): the autograd
  // hook that marks a gradient ready and launches its bucket's all_reduce,
  // and finalize_backward, which waits for the buckets.
  if (f.name.rfind("c10d::Reducer::", 0) == 0) return true;
  if (f.name == "_engine_run_backward")  // distinctive even without a file (a pasted frame list)
    return f.filename.empty() || f.filename.find("torch/autograd/") != std::string::npos;
  // torch.autograd.backward / grad (before 2.2 they called the engine
  // themselves), Tensor.backward (py-spy prints its qualified name).
  if ((f.name == "backward" || f.name == "grad") && f.filename.find("torch/autograd/") != std::string::npos)
    return true;
  return (f.name == "backward" || f.name == "Tensor.backward") && EndsWith(f.filename, "torch/_tensor.py");
}

CollectiveCall CollectiveIn(const model::StackSample& st) {
  CollectiveCall c;
  const int n = static_cast<int>(st.frames.size());
  for (int i = 0; i < n; ++i)
    if (IsCollectiveFrame(st.frames[i])) c.frame = i;
  if (c.found()) {
    c.op = st.frames[c.frame].name;
    return c;
  }
  // Native frames only (gdb): the outermost c10d frame that names one.
  for (int i = 0; i < n; ++i)
    if (std::string op = NativeCollective(st.frames[i].name); !op.empty()) c.frame = i, c.op = op;
  if (c.found()) return c;
  for (int i = 0; i < n; ++i)
    if (IsBackwardFrame(st.frames[i])) c.frame = i;
  if (c.found()) {
    c.op = "all_reduce";
    c.ddp_backward = true;
  }
  return c;
}

bool IsStartedThread(const model::StackSample& st) {
  if (st.frames.empty()) return false;
  const model::Frame& outer = st.frames.back();
  return (outer.name.find("_bootstrap") != std::string::npos) && IsModule(outer.filename, "threading.py");
}

bool IsMainThread(const model::StackSample& st) {
  if (st.thread.find("\"MainThread\"") != std::string::npos) return true;  // py-spy text and JSON
  if (st.thread.rfind("Thread 1 (Thread ", 0) == 0) return true;           // gdb numbers the main thread 1
  if (st.thread.find(": \"") != std::string::npos || st.frames.empty()) return false;  // py-spy: another named thread
  // faulthandler names no thread: the main thread is the Python stack that
  // threading did not start.
  const model::Frame& outer = st.frames.back();
  return !IsStartedThread(st) && (EndsWith(outer.filename, ".py") || outer.name == "<module>");
}

namespace {

// True when `st` is the traceback of a thread that died of an uncaught
// exception (a kThreadError event of the same thread and file): that thread
// is gone, its stack says nothing of where the rank is now.
bool DeadThread(const model::RankDump& d, const model::StackSample& st) {
  for (const auto& e : d.events)
    if (e.kind == model::LogEvent::Kind::kThreadError && e.thread == st.thread && e.file == st.file) return true;
  return false;
}

}  // namespace

const model::StackSample* SpeakingThread(const model::RankDump& d) {
  const model::StackSample *in_call = nullptr, *main = nullptr, *current = nullptr, *worker = nullptr,
                           *first = nullptr;
  for (const auto& st : d.stacks) {
    if (st.frames.empty() || DeadThread(d, st)) continue;
    if (!first) first = &st;
    const bool is_main = IsMainThread(st);
    if (CollectiveIn(st).found() && (!in_call || (is_main && !IsMainThread(*in_call)))) in_call = &st;
    if (is_main && !main) main = &st;
    if (!IsStartedThread(st)) {
      if (!current && st.thread.rfind("Current thread", 0) == 0) current = &st;
      if (!worker) worker = &st;
    }
  }
  for (const model::StackSample* s : {in_call, main, current, worker, first})
    if (s) return s;
  return nullptr;
}

}  // namespace hangdx::analyze
