#include "hangdx/live/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
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

  // Waits up to `timeout` for the first byte of the next request.
  bool WaitReadable(std::chrono::milliseconds timeout) {
    if (Buffered()) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

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

// The pool of request threads; a connection it has no room for is served
// at once, on the accepting thread, by a 503 (t_overloaded).
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(int threads, int max_queued, std::shared_ptr<std::atomic<size_t>> waiting)
      : max_queued_(static_cast<size_t>(max_queued)), waiting_(std::move(waiting)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        *waiting_ = jobs_.size();
        cv_.notify_one();
        return;
      }
    }
    t_overloaded = true;
    fn();
    t_overloaded = false;
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

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
        *waiting_ = jobs_.size();
      }
      fn();
    }
  }
  size_t max_queued_;
  std::shared_ptr<std::atomic<size_t>> waiting_;  // connections queued for a thread
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

// cpp-httplib's server with its connection loop replaced: the same request
// parsing and routing (process_request), through a DeadlineStream.
class HardenedServer : public httplib::Server {
 public:
  HardenedServer(const ServerOptions& o, HttpServer::RejectCounter reject) : opt_(o), reject_(std::move(reject)) {}

  // How many connections wait for a thread (the pool keeps it).
  const std::shared_ptr<std::atomic<size_t>>& waiting() const { return waiting_; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    // cpp-httplib writes an answer's head and body in two sends: without
    // TCP_NODELAY the body waits for the client's delayed ACK, 40 ms per
    // request on Linux, which held a keep-alive pusher to 25 reports/s.
    int one = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (t_overloaded) {
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
      return true;
    } else {
      bool linger = true;
      DeadlineStream strm(sock);
      for (int n = 0; n < opt_.keep_alive_max && is_running(); ++n) {
        if (!(n == 0 ? strm.WaitReadable(opt_.request_timeout) : WaitNext(strm))) {
          if (n == 0) reject_("timeout");  // connected and sent nothing
          linger = false;
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
        return true;
      }
    }
    LingeringClose(sock);
    return true;
  }

  // Waits for the next request on a kept-alive connection, which holds
  // its thread meanwhile: up to keep_alive_timeout, but only 20 ms more
  // once another connection waits for a thread (else 8 idle clients, or a
  // pusher with more connections than threads, starve the rest until they
  // time out or get 503s).
  bool WaitNext(DeadlineStream& strm) const {
    using std::chrono::milliseconds;
    auto end = Clock::now() + opt_.keep_alive_timeout;
    for (;;) {
      bool others = *waiting_ > 0;
      auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now());
      auto slice = others ? milliseconds(20) : std::min(left, milliseconds(50));
      if (slice <= milliseconds(0)) return false;
      if (strm.WaitReadable(slice)) return true;
      if (others) return false;
    }
  }

  ServerOptions opt_;
  HttpServer::RejectCounter reject_;
  std::shared_ptr<std::atomic<size_t>> waiting_ = std::make_shared<std::atomic<size_t>>(0);
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
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }
int HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (!impl_->server) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->server.reset();
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const ServerOptions& options, Handler handler,
                                                        RejectCounter on_reject) {
  auto impl = std::make_unique<Impl>();
  impl->server = std::make_unique<HardenedServer>(options, on_reject);
  httplib::Server& s = *impl->server;
  int threads = std::max(1, options.threads), queued = std::max(0, options.max_queued);
  s.new_task_queue = [threads, queued, waiting = impl->server->waiting()] {
    return new BoundedPool(threads, queued, waiting);
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
    std::string length = req.get_header_value("Content-Length");
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
  int port = options.port;
  if (port == 0) {
    port = s.bind_to_any_port(options.host);
    if (port <= 0) return IoError("--listen: cannot bind " + options.host + " (any port)");
  } else if (!s.bind_to_port(options.host, port)) {
    return IoError("--listen: cannot bind " + options.host + ":" + std::to_string(port));
  }
  impl->port = port;
  HardenedServer* raw = impl->server.get();
  impl->thread = std::thread([raw] { raw->listen_after_bind(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace hangdx::live
