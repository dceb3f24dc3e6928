#include "hangdx/live/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "hangdx/live/http_wire.h"

namespace hangdx::live {
namespace {

using Clock = std::chrono::steady_clock;

// True on the thread that runs a connection the queue had no room for.
thread_local bool t_overloaded = false;
// Set while serving a request whose connection must close after the
// answer: an error, or a body left unread (the stream is out of step).
thread_local bool t_close = false;
// Set when the handler made the answer: it counts its own refusals.
thread_local bool t_from_handler = false;

// Closes a connection without losing the answer just written: a close()
// with unread input resets the connection, and the peer may then never see
// the 413. So: no more writes, read away what the client still sends (a
// little, briefly), then close.
void LingeringClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  char buf[16384];
  size_t drained = 0;
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  while (drained < (size_t{1} << 20) && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(fd);
}

// A socket as a cpp-httplib Stream whose reads share one deadline (the
// request's), so a client cannot hold a thread by sending a byte now and
// then. Reads are buffered: httplib reads the head a byte at a time.
class DeadlineStream : public httplib::Stream {
 public:
  explicit DeadlineStream(int fd) : fd_(fd) {}

  void SetDeadline(Clock::time_point d) { deadline_ = d; }
  bool timed_out() const { return timed_out_; }
  bool Buffered() const { return pos_ < len_; }

  bool is_readable() const override { return pos_ < len_ || Poll(POLLIN); }
  bool is_writable() const override { return Poll(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (!Poll(POLLIN)) return -1;
      ssize_t n = ::recv(fd_, buf_, sizeof buf_, 0);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!Poll(POLLOUT)) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Name(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Name(false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  // Waits for `events` until the deadline; false (and timed_out_) when it passed.
  bool Poll(short events) const {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    pollfd p{fd_, events, 0};
    if (left > 0 && ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 60000))) == 1) return true;
    timed_out_ = true;
    return false;
  }

  void Name(bool peer, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    int rc = peer ? ::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len)
                  : ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    if (rc != 0) return;
    char host[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
      port = ntohs(v6->sin6_port);
    }
    ip = host;
  }

  int fd_;
  Clock::time_point deadline_ = Clock::now() + std::chrono::seconds(10);
  mutable bool timed_out_ = false;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

// True when what `fd` has received so far holds a whole request head (its
// blank line), or more than a head may be (the parser answers 431), or the
// peer closed or failed: the connection is worth a request thread. A
// client that trickles its head a byte at a time waits in the parker, not
// on a thread (40 such connections held every thread and /healthz timed
// out: the fresh-user tester's slow2.py).
bool HeadArrived(int fd) {
  constexpr size_t kPeek = 16384;
  char buf[kPeek];
  ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // closed: the server sees it
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  if (static_cast<size_t>(n) >= kPeek) return true;
  return std::string_view(buf, static_cast<size_t>(n)).find("\r\n\r\n") != std::string_view::npos;
}

// The client's address without its port: the key of the per-client cap.
std::string PeerHost(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, host, sizeof host);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, host, sizeof host);
  return host;
}

// Connections waiting for their next request (the first, or the next on a
// kept-alive connection) wait here, on one epoll thread, not on a request
// thread: a request thread is taken only once a request's bytes arrive.
// So idle connections (400 opened and left silent, or pushers between two
// reports) cost a descriptor each, never a thread, and never fill the
// queue in front of /healthz. Bounded: at most `per_client` idle
// connections per client address and `total` in all; past either the
// oldest idle one (of that client, else of all) is closed, counted
// "overloaded". One idle past its deadline (the first request's
// request_timeout from the accept, or keep_alive_timeout) is closed, a
// first one counted "timeout".
class Parker {
 public:
  using Resume = std::function<void(int fd, int served)>;

  Parker(size_t per_client, size_t total, HttpServer::RejectCounter reject, Resume resume)
      : per_client_(std::max<size_t>(1, per_client)),
        total_(std::max<size_t>(1, total)),
        reject_(std::move(reject)),
        resume_(std::move(resume)) {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_, &ev);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Parker() { Stop(); }

  // Holds `fd` (which has served `served` requests) until its next request
  // arrives, then hands it to `resume` on the parker's thread. False when
  // stopping (the caller still owns `fd`).
  bool Park(int fd, int served, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return false;
    Entry e{PeerHost(fd), served, deadline, ++seq_};
    auto& mine = by_client_[e.client];
    mine.insert({e.seq, fd});
    order_.insert({e.seq, fd});
    parked_.emplace(fd, std::move(e));
    epoll_event ev{};
    // Edge-triggered: a head that has begun to arrive (readable, not yet
    // whole: HeadArrived) must not wake the loop again until more comes.
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.fd = fd;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    if (mine.size() > per_client_) Evict(mine.begin()->second);
    if (parked_.size() > total_) Evict(order_.begin()->second);
    return true;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    if (thread_.joinable()) thread_.join();
    for (const auto& [fd, e] : parked_) ::close(fd);
    parked_.clear();
    ::close(epfd_);
    ::close(wake_);
  }

 private:
  struct Entry {
    std::string client;
    int served = 0;
    Clock::time_point deadline;
    uint64_t seq = 0;
  };

  // Forgets `fd` (mu_ held); the caller closes or resumes it.
  void Unpark(int fd) {
    auto it = parked_.find(fd);
    if (it == parked_.end()) return;
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    auto c = by_client_.find(it->second.client);
    c->second.erase({it->second.seq, fd});
    if (c->second.empty()) by_client_.erase(c);
    order_.erase({it->second.seq, fd});
    parked_.erase(it);
  }

  void Evict(int fd) {  // mu_ held
    Unpark(fd);
    ::close(fd);
    reject_("overloaded");
  }

  void Loop() {
    epoll_event events[256];
    auto next_scan = Clock::now();
    for (;;) {
      int n = ::epoll_wait(epfd_, events, 256, 100);
      std::vector<std::pair<int, int>> ready;  // fd, served
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        for (int i = 0; i < n; ++i) {
          auto it = parked_.find(events[i].data.fd);
          if (it == parked_.end()) continue;      // the wake descriptor, or evicted meanwhile
          if (!HeadArrived(it->first)) continue;  // part of a head: wait for the rest (or the deadline)
          ready.emplace_back(it->first, it->second.served);
          Unpark(it->first);
        }
        auto now = Clock::now();
        if (now >= next_scan) {
          next_scan = now + std::chrono::milliseconds(100);
          std::vector<int> late;
          for (const auto& [fd, e] : parked_)
            if (e.deadline <= now) late.push_back(fd);
          for (int fd : late) {
            bool first = parked_[fd].served == 0;
            Unpark(fd);
            ::close(fd);
            if (first) reject_("timeout");  // connected and sent nothing
          }
        }
      }
      for (auto [fd, served] : ready) resume_(fd, served);
    }
  }

  size_t per_client_, total_;
  HttpServer::RejectCounter reject_;
  Resume resume_;
  int epfd_ = -1, wake_ = -1;
  std::mutex mu_;
  std::map<int, Entry> parked_;
  std::map<std::string, std::set<std::pair<uint64_t, int>>> by_client_;  // oldest first
  std::set<std::pair<uint64_t, int>> order_;                             // oldest first
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// The pool of request threads, and the parker of the connections between
// requests; a connection it has no room for is served at once, on the
// thread that hands it over, by a 503 (t_overloaded).
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(const ServerOptions& o, HttpServer::RejectCounter reject, Parker::Resume serve)
      : max_queued_(static_cast<size_t>(std::max(0, o.max_queued))),
        parker_(static_cast<size_t>(o.max_idle_per_client), static_cast<size_t>(o.max_idle), std::move(reject),
                [this, serve = std::move(serve)](int fd, int served) {
                  enqueue([serve, fd, served] { serve(fd, served); });
                }) {
    for (int i = 0; i < std::max(1, o.threads); ++i) threads_.emplace_back([this] { Work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    t_overloaded = true;
    fn();
    t_overloaded = false;
  }
  void shutdown() override {
    parker_.Stop();  // first: it hands connections to the threads
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  bool Park(int fd, int served, Clock::time_point deadline) { return parker_.Park(fd, served, deadline); }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  Parker parker_;  // last: destroyed (stopped) first
};

// cpp-httplib's server with its connection loop replaced: the same request
// parsing and routing (process_request), through a DeadlineStream.
class HardenedServer : public httplib::Server {
 public:
  HardenedServer(const ServerOptions& o, HttpServer::RejectCounter reject) : opt_(o), reject_(std::move(reject)) {}

  // The pool of the listen loop (cpp-httplib makes it: new_task_queue).
  void SetPool(BoundedPool* pool) { pool_ = pool; }

  // Serves connection `sock` from its request number `served` on: a new
  // one (0), or one the parker hands back with its next request arriving.
  void Serve(int sock, int served) {
    if (t_overloaded) {
      // No room in the queue: a connection that has not sent a whole head
      // yet is parked rather than refused (it may be a client a flood of
      // idle connections would otherwise shut out); one with a request
      // gets 503.
      if (served == 0 && !HeadArrived(sock) && pool_ && pool_->Park(sock, 0, Clock::now() + opt_.request_timeout))
        return;
      static const char kBusy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n";
      (void)!::send(sock, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      reject_("overloaded");
      // This runs on the accepting thread: no lingering (up to 500 ms for
      // a client that does not close), or a flood of connections would
      // stop the accepts and later clients would be refused, not answered.
      // What the client sent so far is drained without waiting, so the
      // close does not reset the 503 away.
      ::shutdown(sock, SHUT_WR);
      char buf[16384];
      for (int i = 0; i < 64 && ::recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
      }
      ::close(sock);
      return;
    }
    {
      bool linger = true;
      DeadlineStream strm(sock);
      for (int n = served; n < opt_.keep_alive_max && is_running(); ++n) {
        if (!strm.Buffered() && !HeadArrived(sock)) {
          // No whole request head yet: wait in the parker, not on this thread.
          auto wait = n == 0 ? opt_.request_timeout : opt_.keep_alive_timeout;
          if (pool_ && pool_->Park(sock, n, Clock::now() + wait)) return;
          linger = false;  // stopping
          break;
        }
        strm.SetDeadline(Clock::now() + opt_.request_timeout);
        bool closed = false;
        t_close = false;
        bool ok = process_request(strm, n + 1 == opt_.keep_alive_max, closed, [](httplib::Request&) {});
        if (strm.timed_out()) {  // a trickle: no answer to save, just close
          reject_("timeout");
          linger = false;
          break;
        }
        if (!ok || closed || t_close) break;
      }
      if (!linger) {
        ::close(sock);
        return;
      }
    }
    LingeringClose(sock);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    // cpp-httplib writes an answer's head and body in two sends: without
    // TCP_NODELAY the body waits for the client's delayed ACK, 40 ms per
    // request on Linux, which held a keep-alive pusher to 25 reports/s.
    int one = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Serve(sock, 0);
    return true;
  }

  ServerOptions opt_;
  HttpServer::RejectCounter reject_;
  BoundedPool* pool_ = nullptr;
};

HttpRequest Convert(const httplib::Request& req) {
  HttpRequest r;
  r.method = req.method;
  r.path = req.path;
  for (const auto& [k, v] : req.headers) r.headers.emplace_back(k, v);
  for (const auto& [k, v] : req.params) r.params.emplace_back(k, v);
  r.body = req.body;
  r.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
  return r;
}

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (EqualsNoCase(k, name)) return v;
  return "";
}

std::string HttpServer::RejectReason(int status) {
  switch (status) {
    case 401:
    case 403:
      return "unauthorized";
    case 413:
      return "too_large";
    case 400:
    case 414:
    case 431:
      return "malformed";
    case 404:
    case 405:
      return "not_found";
    case 408:
      return "timeout";
    case 503:
      return "overloaded";
    default:
      return status >= 500 ? "error" : status >= 400 ? "malformed" : "";
  }
}

struct HttpServer::Impl {
  std::unique_ptr<HardenedServer> server;
  std::thread thread;
  int port = 0;
  std::atomic<bool> listen_returned{false};  // the listening thread is done
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }
int HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (!impl_->server) return;
  // httplib's stop() does nothing until listen_after_bind has marked the
  // server running: a watch stopped right after its start (a test, a
  // --duration of 0) waited for ever in the join below. So wait for the
  // thread to be running (or done) first.
  while (!impl_->server->is_running() && !impl_->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->server.reset();
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const ServerOptions& options, Handler handler,
                                                        RejectCounter on_reject) {
  auto impl = std::make_unique<Impl>();
  impl->server = std::make_unique<HardenedServer>(options, on_reject);
  httplib::Server& s = *impl->server;
  HardenedServer* hardened = impl->server.get();
  s.new_task_queue = [options, on_reject, hardened] {
    auto* pool = new BoundedPool(options, on_reject, [hardened](int fd, int served) { hardened->Serve(fd, served); });
    hardened->SetPool(pool);
    return pool;
  };
  s.set_payload_max_length(options.max_body_bytes);
  s.set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(options.request_timeout).count());
  s.set_write_timeout(5, 0);
  auto serve = [handler](const httplib::Request& req, httplib::Response& res, std::string body) {
    HttpResponse out;
    try {
      HttpRequest r = Convert(req);
      r.body = std::move(body);
      out = handler(r);
      t_from_handler = true;
    } catch (const std::exception& e) {
      out = {500, "text/plain", std::string("internal error: ") + e.what() + "\n"};
    }
    res.status = out.status;
    res.set_content(out.body, out.content_type.c_str());
  };
  // Bodies are read here, not by cpp-httplib: its reader drains a body over
  // the limit to the end before it answers 413 (10 GB announced, 10 GB
  // read) and puts no limit on a chunked one. Here a Content-Length over
  // the limit is refused unread, and a chunked body as soon as it passes it.
  size_t max_body = options.max_body_bytes;
  auto serve_body = [serve, max_body](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
    // RFC 9110 8.6: Content-Length is digits only, and two that differ
    // make the message's framing unknown (request smuggling): 400, unread.
    std::string length = req.get_header_value("Content-Length");
    bool malformed = length.find_first_not_of("0123456789") != std::string::npos;
    for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i)
      malformed = malformed || req.get_header_value("Content-Length", i) != length;
    if (malformed) {
      res.status = 400;
      res.set_content("{\"error\": \"a Content-Length that is not one non-negative number\"}\n", "application/json");
      return;
    }
    bool too_big = !length.empty() && (length.size() > 19 || std::stoull(length) > max_body);
    std::string body;
    bool complete = !too_big && reader([&](const char* data, size_t n) {
      if (body.size() + n > max_body) {
        too_big = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_big) {
      res.status = 413;
      res.set_content("{\"error\": \"the body is over " + std::to_string(max_body) + " bytes\"}\n", "application/json");
    } else if (!complete) {
      res.status = 400;
      res.set_content("{\"error\": \"incomplete body\"}\n", "application/json");
    } else {
      serve(req, res, std::move(body));
    }
  };
  auto serve_plain = [serve](const httplib::Request& req, httplib::Response& res) { serve(req, res, req.body); };
  s.Get(".*", serve_plain);
  s.Delete(".*", serve_plain);
  s.Post(".*", serve_body);
  s.Put(".*", serve_body);
  // Every answer passes here, also those cpp-httplib makes itself (400 for
  // a request it cannot parse, 414 for a long target). After an error the
  // connection closes: what follows on it cannot be trusted to be in step.
  s.set_logger([on_reject](const httplib::Request&, const httplib::Response& res) {
    std::string reason = RejectReason(res.status);
    if (!reason.empty() && !t_from_handler) on_reject(reason);
    t_from_handler = false;
    if (res.status >= 400) t_close = true;
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("internal error\n", "text/plain");
  });
  // cpp-httplib listens with a backlog of 5: a burst of connections past
  // it waits in SYN-ACK retransmits (1 s, 3 s, 7 s...) before it is even
  // accepted. Its socket is taken as it is made, and listened on again with
  // a deep backlog once bound (a second listen() only changes the backlog).
  // And SO_REUSEADDR, not cpp-httplib's SO_REUSEPORT: with that, a second
  // watch given the same --listen bound it too and the kernel shared the
  // connections between the two, silently. SO_REUSEADDR only lets a
  // restarted watch bind while the old connections are in TIME_WAIT.
  auto listening = std::make_shared<int>(-1);
  s.set_socket_options([listening](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *listening = sock;
  });
  int port = options.port;
  errno = 0;
  if (port == 0) {
    port = s.bind_to_any_port(options.host);
    if (port <= 0) return IoError("--listen: cannot bind " + options.host + " (any port)");
  } else if (!s.bind_to_port(options.host, port)) {
    std::string address = options.host + ":" + std::to_string(port);
    if (errno == EADDRINUSE)
      return IoError("--listen: " + address + " is in use (another hangdx watch, or another service, listens there)");
    return IoError("--listen: cannot bind " + address + (errno ? std::string(": ") + std::strerror(errno) : ""));
  }
  impl->port = port;
  if (*listening >= 0) ::listen(*listening, 4096);
  HardenedServer* raw = impl->server.get();
  std::atomic<bool>* returned = &impl->listen_returned;
  impl->thread = std::thread([raw, returned] {
    raw->listen_after_bind();
    *returned = true;
  });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace hangdx::live
