#include "hangdx/live/testing/fake_workers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "hangdx/live/http_wire.h"

namespace hangdx::live::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kListenerTag = uint64_t{1} << 62;
constexpr uint64_t kWakeTag = uint64_t{1} << 61;

// One rank's place in the job model (see the header).
struct RankModel {
  double step = 0.1;
  int64_t steps_base = 0;  // steps done when `since` was set
  Clock::time_point since;
  bool frozen = false, killed = false, wedged = false, mismatch = false;

  int64_t Steps(Clock::time_point now) const {
    if (frozen) return steps_base;
    return steps_base + static_cast<int64_t>(std::chrono::duration<double>(now - since).count() / step);
  }
};

struct Conn {
  int fd = -1;
  int rank = -1;
  int served = 0;
  MessageReader reader{MessageReader::Kind::kRequest, {16 * 1024, 1 << 20}};
  std::string out;
  size_t out_off = 0;
};

std::string RanksString(int n) {
  std::string s = "[";
  for (int r = 0; r < n; ++r) {
    if (r) s += ", ";
    s += std::to_string(r);
  }
  return s + "]";
}

}  // namespace

struct FakeWorkers::Impl {
  FakeWorkerOptions opt;
  mutable std::mutex mu;  // guards the model (faults come from other threads)
  std::vector<RankModel> model;
  int64_t cap = INT64_MAX;  // no collective completes beyond this seq (a mismatch)
  Clock::time_point start;
  int64_t min_steps = 0;  // cached min over ranks of Steps()
  Clock::time_point min_at;

  std::vector<int> listeners;
  std::vector<int> ports;
  std::vector<Conn> conns;
  std::vector<size_t> free_conns;
  int epfd = -1, wakefd = -1;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> served{0};
  std::atomic<bool> kill_pending{false};
  int first = 0;  // the first served rank: listeners[i] is rank first + i
  std::string pg_config_nccl, pg_config_gloo;

  // Completed and enqueued seq of `rank` now (caller holds mu).
  void Counters(int rank, Clock::time_point now, int64_t* completed, int64_t* enqueued) {
    if (now - min_at > std::chrono::milliseconds(5) || min_at == Clock::time_point()) {
      int64_t m = INT64_MAX;
      for (const auto& r : model) m = std::min(m, r.Steps(now));
      min_steps = m;
      min_at = now;
    }
    int64_t c = std::min(min_steps, cap);
    *completed = c;
    *enqueued = std::min(model[rank].Steps(now), c + 1);
  }

  std::string Entry(int rank, int64_t seq, bool retired, bool mismatch_op, int64_t created_ns) const {
    bool nccl = opt.backend == "nccl";
    std::string op = std::string(nccl ? "nccl:" : "gloo:") + (mismatch_op ? "broadcast" : "all_reduce");
    std::string state = nccl ? (retired ? "completed" : "started") : "scheduled";
    std::string s =
        "{\"collective_seq_id\":" + std::to_string(seq) +
        ",\"input_dtypes\":[\"Float\"],\"input_sizes\":[[1024]],\"is_p2p\":false,\"op_id\":" + std::to_string(seq) +
        ",\"output_dtypes\":[\"Float\"],\"output_sizes\":[[1024]],\"p2p_seq_id\":0,\"pg_id\":0,"
        "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"" +
        op + "\",\"record_id\":" + std::to_string(seq - 1) + ",\"retired\":" + (retired ? "true" : "false") +
        ",\"state\":\"" + state + "\",\"thread_id\":\"140000000000" + std::to_string(rank % 100) +
        "\",\"thread_name\":\"pt_main_thread\",\"time_created_ns\":" + std::to_string(created_ns) +
        ",\"time_discovered_completed_ns\":" + (nccl && retired ? std::to_string(created_ns + 1000) : "0") +
        ",\"time_discovered_started_ns\":" + (nccl ? std::to_string(created_ns + 500) : "0") +
        ",\"timeout_ms\":600000}";
    return s;
  }

  // FlightRecorder::dump_json: keys in nlohmann's (sorted) order.
  std::string FrJson(int rank, bool include_entries, bool only_active) {
    auto now = Clock::now();
    int64_t completed, enqueued;
    bool mismatch;
    double step;
    {
      std::lock_guard<std::mutex> lock(mu);
      Counters(rank, now, &completed, &enqueued);
      mismatch = model[rank].mismatch;
      step = model[rank].step;
    }
    bool nccl = opt.backend == "nccl";
    // One allocation for the 59 KB of a 10,000-rank answer: the fake fleet
    // shares the benchmark's 2 cores with the watch it is measured by.
    std::string s;
    s.reserve((nccl ? pg_config_nccl : pg_config_gloo).size() + 256 +
              (include_entries ? static_cast<size_t>(opt.entries) * 600 : 0));
    s += "{\"comm_lib_version\":\"";
    s += nccl ? "2.21.5" : "";
    s += "\"";
    if (include_entries && enqueued > 0) {
      s += ",\"entries\":[";
      bool first = true;
      int64_t wall0 = 1700000000000000000;
      for (int64_t seq = std::max<int64_t>(1, enqueued - opt.entries + 1); seq <= enqueued; ++seq) {
        bool retired = seq <= completed;
        if (only_active && retired) continue;
        if (!first) s += ',';
        first = false;
        s += Entry(rank, seq, retired, mismatch && seq == cap + 1, wall0 + static_cast<int64_t>(seq * step * 1e9));
      }
      s += "]";
    }
    if (!nccl) s += ",\"nccl_comm_state\":{}";
    s += nccl ? pg_config_nccl : pg_config_gloo;
    s += ",\"pg_status\":{\"0\":{\"last_completed_collective\":\"" + std::to_string(completed) +
         "\",\"last_enqueued_collective\":\"" + std::to_string(enqueued) + "\",\"last_started_collective\":\"" +
         (nccl ? std::to_string(enqueued) : std::string("-1")) + "\"}}";
    s += ",\"version\":\"2.10\"}";
    return s;
  }

  std::string Traceback(int rank) {
    int64_t completed, enqueued;
    {
      std::lock_guard<std::mutex> lock(mu);
      Counters(rank, Clock::now(), &completed, &enqueued);
    }
    std::string s =
        "Current thread 0x00007f0000001000 (most recent call first):\n  <no Python frame>\n\n"
        "Thread 0x00007f0000000b80 (most recent call first):\n";
    if (enqueued > completed)
      s += "  File \"/opt/venv/torch/distributed/distributed_c10d.py\", line 2950 in all_reduce\n";
    else
      s += "  File \"/opt/train/train.py\", line 61 in save_checkpoint\n";
    s +=
        "  File \"/opt/train/train.py\", line 88 in train_step\n  File \"/opt/train/train.py\", line 120 in <module>\n";
    return s;
  }

  static std::string QueryValue(const std::string& target, const std::string& key) {
    size_t q = target.find('?');
    if (q == std::string::npos) return "";
    std::string query = target.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t amp = query.find('&', pos);
      std::string kv = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
      size_t eq = kv.find('=');
      if (kv.substr(0, eq) == key) return eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (amp == std::string::npos) break;
      pos = amp + 1;
    }
    return "\x01";  // absent
  }

  // The handlers of torch's WorkerServer; returns status and body.
  std::pair<int, std::string> Handle(int rank, const HttpHead& h) {
    std::string path = h.target.substr(0, h.target.find('?'));
    bool nccl = opt.backend == "nccl";
    if (h.method == "GET" && (path == "/handler/" || path == "/handler")) {
      return {200, nccl ? "[\"dump_nccl_trace_pickle\",\"dump_nccl_trace_json\",\"torch_profile\",\"dump_traceback\","
                          "\"pyspy_dump\",\"wait_counter_values\",\"fr_trace_json\",\"ping\"]"
                        : "[\"torch_profile\",\"dump_traceback\",\"pyspy_dump\",\"wait_counter_values\","
                          "\"fr_trace_json\",\"ping\"]"};
    }
    if (path.rfind("/handler/", 0) != 0) return {404, "Not Found"};
    std::string name = path.substr(9);
    if (name == "ping") return {200, "pong"};
    if (name == "fr_trace_json") return {200, FrJson(rank, true, false)};
    if (name == "dump_nccl_trace_json" && nccl) {
      std::string inc = QueryValue(h.target, "includecollectives"), act = QueryValue(h.target, "onlyactive");
      for (const std::string* v : {&inc, &act})
        if (*v != "\x01" && *v != "true" && *v != "false")
          return {400, "Invalid parameter: value must be true or false"};
      return {200, FrJson(rank, inc != "false", act == "true")};
    }
    if (name == "dump_traceback") return {200, Traceback(rank)};
    if (name == "wait_counter_values") return {200, "{}"};
    return {404, "Handler " + name + " not found: Failed to find handler " + name};
  }

  void Respond(size_t ci, int status, const std::string& body, bool close) {
    Conn& c = conns[ci];
    const char* reason = status == 200 ? "OK" : status == 400 ? "Bad Request" : "Not Found";
    c.out.clear();
    c.out.reserve(body.size() + 160);  // the head, then the body copied once
    c.out += "HTTP/1.1 " + std::to_string(status) + " " + reason +
             "\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nContent-Type: " + (body.size() && body[0] == '{' ? "application/json" : "text/plain") + "\r\n" +
             (close ? "Connection: close\r\n" : "Connection: Keep-Alive\r\nKeep-Alive: timeout=5, max=5\r\n") + "\r\n";
    c.out += body;
    c.out_off = 0;
    served.fetch_add(1, std::memory_order_relaxed);  // before the client can have it
    Flush(ci, close);
  }

  void Flush(size_t ci, bool close_after) {
    Conn& c = conns[ci];
    while (c.out_off < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) {
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.u64 = ci;
        ::epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &ev);
        return;
      }
      if (n <= 0) {
        CloseConn(ci);
        return;
      }
      c.out_off += static_cast<size_t>(n);
    }
    c.out.clear();
    c.out_off = 0;
    if (close_after) {
      CloseConn(ci);
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = ci;
    ::epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void CloseConn(size_t ci) {
    Conn& c = conns[ci];
    if (c.fd < 0) return;
    ::epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c = Conn();
    free_conns.push_back(ci);
  }

  void Accept(int rank) {
    for (;;) {
      int fd = ::accept4(listeners[rank - first], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      size_t ci;
      if (!free_conns.empty()) {
        ci = free_conns.back();
        free_conns.pop_back();
      } else {
        ci = conns.size();
        conns.emplace_back();
      }
      conns[ci].fd = fd;
      conns[ci].rank = rank;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = ci;
      ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void OnConn(size_t ci, uint32_t events) {
    Conn& c = conns[ci];
    if (events & EPOLLOUT) {
      Flush(ci, c.served >= opt.keepalive_max);
      return;
    }
    char buf[16384];
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (n < 0 && errno == EAGAIN) return;
      CloseConn(ci);
      return;
    }
    bool wedged;
    {
      std::lock_guard<std::mutex> lock(mu);
      wedged = model[c.rank].wedged;
    }
    if (wedged) return;  // reads, never answers
    auto st = c.reader.Feed(buf, static_cast<size_t>(n));
    if (st == MessageReader::State::kError) {
      Respond(ci, 400, "Bad Request", true);
      return;
    }
    if (st != MessageReader::State::kDone || !c.out.empty()) return;
    ++c.served;
    auto [status, body] = Handle(c.rank, c.reader.head());
    bool close = c.served >= opt.keepalive_max || c.reader.head().close;
    c.reader.Next();
    Respond(ci, status, body, close);
  }

  void Loop() {
    std::vector<epoll_event> events(512);
    while (!stop.load()) {
      int n = ::epoll_wait(epfd, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) {
          uint64_t v;
          (void)!::read(wakefd, &v, sizeof v);
          continue;
        }
        if (tag & kListenerTag) {
          Accept(static_cast<int>(tag & ~kListenerTag));
          continue;
        }
        if (tag < conns.size() && conns[tag].fd >= 0) OnConn(tag, events[i].events);
      }
      if (kill_pending.exchange(false)) CloseKilled();
    }
  }

  // Kill closes the rank's port and its connections (from the serving thread).
  void CloseKilled() {
    std::vector<int> killed;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < listeners.size(); ++i)
        if (listeners[i] >= 0 && model[first + i].killed) killed.push_back(first + static_cast<int>(i));
    }
    for (int r : killed) {
      ::epoll_ctl(epfd, EPOLL_CTL_DEL, listeners[r - first], nullptr);
      ::close(listeners[r - first]);
      listeners[r - first] = -1;
      for (size_t ci = 0; ci < conns.size(); ++ci)
        if (conns[ci].fd >= 0 && conns[ci].rank == r) CloseConn(ci);
    }
  }

  Clock::time_point At(int64_t at_ns) const {
    return at_ns > 0 ? Clock::time_point(std::chrono::nanoseconds(at_ns)) : Clock::now();
  }

  void Freeze(int rank, bool kill, bool wedge, int64_t at_ns) {
    std::lock_guard<std::mutex> lock(mu);
    if (rank < 0 || rank >= static_cast<int>(model.size())) return;
    auto now = At(at_ns);
    RankModel& m = model[rank];
    m.steps_base = m.Steps(now);
    m.since = now;
    m.frozen = true;
    m.killed = m.killed || kill;
    m.wedged = m.wedged || wedge;
    min_at = Clock::time_point();
  }
};

FakeWorkers::FakeWorkers(FakeWorkerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  std::string ranks = RanksString(impl_->opt.ranks);
  impl_->pg_config_nccl = ",\"pg_config\":{\"0\":{\"desc\":\"default_pg\",\"name\":\"0\",\"ranks\":\"" + ranks + "\"}}";
  impl_->pg_config_gloo = ",\"pg_config\":{\"\":{\"desc\":\"\",\"name\":\"\",\"ranks\":\"" + ranks + "\"}}";
}

FakeWorkers::~FakeWorkers() { Stop(); }

// A port and a connection per rank: 10,000 ranks need 20,000 descriptors.
// Lift the soft limit, and the hard one where allowed (root).
void RaiseFileLimit(size_t want) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_max < want) {
    rlimit more{want, want};
    if (::setrlimit(RLIMIT_NOFILE, &more) == 0) return;
  }
  rl.rlim_cur = std::max<rlim_t>(rl.rlim_cur, std::min<rlim_t>(rl.rlim_max, want));
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

Status FakeWorkers::Start() {
  Impl& m = *impl_;
  int from = std::max(0, m.opt.serve_from);
  int to = m.opt.serve_to < 0 ? m.opt.ranks : std::min(m.opt.serve_to, m.opt.ranks);
  m.first = from;
  RaiseFileLimit(2 * static_cast<size_t>(std::max(0, to - from)) + 4096);
  m.start = m.At(m.opt.start_ns);
  m.model.assign(m.opt.ranks, RankModel{});
  for (auto& r : m.model) {
    r.step = m.opt.step_seconds;
    r.since = m.start;
  }
  m.epfd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wakefd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wev{};
  wev.events = EPOLLIN;
  wev.data.u64 = kWakeTag;
  ::epoll_ctl(m.epfd, EPOLL_CTL_ADD, m.wakefd, &wev);
  for (int r = from; r < to; ++r) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(m.opt.base_port > 0 ? m.opt.base_port + r : 0));
    ::inet_pton(AF_INET, m.opt.host.c_str(), &a.sin_addr);
    socklen_t len = sizeof a;
    if (m.opt.base_port > 0) {
      int one = 1;
      if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 512) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      Stop();
      return IoError("fake worker " + std::to_string(r) + ": cannot listen: " + why);
    }
    m.listeners.push_back(fd);
    m.ports.push_back(ntohs(a.sin_port));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerTag | static_cast<uint64_t>(r);
    ::epoll_ctl(m.epfd, EPOLL_CTL_ADD, fd, &ev);
  }
  m.thread = std::thread([&m] { m.Loop(); });
  return Status::Ok();
}

void FakeWorkers::Stop() {
  Impl& m = *impl_;
  m.stop = true;
  if (m.wakefd >= 0) {
    uint64_t one = 1;
    (void)!::write(m.wakefd, &one, sizeof one);
  }
  if (m.thread.joinable()) m.thread.join();
  for (size_t ci = 0; ci < m.conns.size(); ++ci) m.CloseConn(ci);
  for (int& fd : m.listeners)
    if (fd >= 0) ::close(fd), fd = -1;
  if (m.epfd >= 0) ::close(m.epfd), m.epfd = -1;
  if (m.wakefd >= 0) ::close(m.wakefd), m.wakefd = -1;
}

std::vector<std::string> FakeWorkers::Urls() const {
  std::vector<std::string> out;
  for (int p : impl_->ports) out.push_back("http://" + impl_->opt.host + ":" + std::to_string(p));
  return out;
}

void FakeWorkers::Hang(int rank, int64_t at_ns) { impl_->Freeze(rank, false, false, at_ns); }
void FakeWorkers::Kill(int rank, int64_t at_ns) {
  impl_->Freeze(rank, true, false, at_ns);
  impl_->kill_pending = true;
  uint64_t one = 1;
  (void)!::write(impl_->wakefd, &one, sizeof one);
}
void FakeWorkers::Wedge(int rank, int64_t at_ns) { impl_->Freeze(rank, false, true, at_ns); }

void FakeWorkers::Mismatch(int rank, int64_t at_ns) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (rank < 0 || rank >= static_cast<int>(m.model.size())) return;
  auto now = m.At(at_ns);
  int64_t low = INT64_MAX;
  for (const auto& r : m.model) low = std::min(low, r.Steps(now));
  m.cap = std::min(m.cap, low);
  m.model[rank].mismatch = true;
  m.min_at = Clock::time_point();
}

void FakeWorkers::Slow(int rank, double seconds, int64_t at_ns) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (rank < 0 || rank >= static_cast<int>(m.model.size()) || seconds <= 0) return;
  auto now = m.At(at_ns);
  RankModel& r = m.model[rank];
  r.steps_base = r.Steps(now);
  r.since = now;
  r.step = seconds;
  m.min_at = Clock::time_point();
}

uint64_t FakeWorkers::served() const { return impl_->served.load(); }

}  // namespace hangdx::live::testing
