#include "hangdx/live/fanout.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

namespace hangdx::live {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Every outstanding request keeps a socket open, and so does every
// keep-alive connection: lift the soft descriptor limit to the hard one.
void RaiseFileLimit() {
  static bool done = [] {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
    rlimit more{std::max<rlim_t>(rl.rlim_max, 1 << 17), std::max<rlim_t>(rl.rlim_max, 1 << 17)};
    if (::setrlimit(RLIMIT_NOFILE, &more) == 0) return true;  // allowed (root)
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    return true;
  }();
  (void)done;
}

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string error;  // "" when resolved
};

struct Conn {
  enum class State { kClosed, kConnecting, kWriting, kReading, kIdle };
  int fd = -1;
  State state = State::kClosed;
  std::string out;
  size_t out_off = 0;
  MessageReader reader{MessageReader::Kind::kResponse, {}};
  bool reused = false;  // the current request went out on a kept-alive connection
  bool retried = false;
  int call = -1;  // index into the calls of this Run, -1 when none
  Clock::time_point start, deadline;
};

}  // namespace

struct HttpFanout::Impl {
  struct Target {
    Endpoint endpoint;
    std::string host_header;
    Conn conn;
    std::deque<int> queue;  // calls waiting for this endpoint's connection
  };

  FanoutOptions opt;
  int epfd = -1;
  std::vector<Target> targets;
  std::map<std::string, Address> resolved;  // "host:port" -> address
  size_t idle = 0;

  // The state of one Run.
  const std::vector<HttpCall>* calls = nullptr;
  std::vector<HttpReply>* replies = nullptr;
  const HttpFanout::OnReply* on_reply = nullptr;
  std::chrono::milliseconds timeout{0};
  std::deque<size_t> ready;  // targets with queued calls and no request in flight
  size_t in_flight = 0, remaining = 0;
  // Buffers of bodies that on_reply emptied, for the next responses to be
  // read into: a round of 10,000 answers of 59 KB otherwise allocates and
  // frees each (a tenth of the watch's CPU). At most kSpare are kept.
  static constexpr size_t kSpare = 64;
  std::vector<std::string> spare;

  // Keeps the memory of a body that on_reply emptied, or frees it: an
  // empty body must not hold 59 KB in a round's 10,000 replies.
  void Recycle(std::string* body) {
    if (!body->empty() || body->capacity() < 4096) return;
    if (spare.size() < kSpare) spare.push_back(std::move(*body));
    std::string().swap(*body);
  }

  void NewReader(Conn* c) {
    c->reader = MessageReader(MessageReader::Kind::kResponse, {16 * 1024, opt.max_response_bytes});
  }

  // A spare buffer for a response whose first bytes are coming: given then,
  // not when the request is sent, so the 2,048 requests in flight that
  // wait for their servers hold none (128 MB).
  void GiveBuffer(Conn* c) {
    if (c->reader.started() || spare.empty()) return;
    c->reader.Recycle(std::move(spare.back()));
    spare.pop_back();
  }

  const Address& Resolve(const Target& t) {
    std::string key = t.endpoint.host + ":" + std::to_string(t.endpoint.port);
    auto it = resolved.find(key);
    if (it != resolved.end() && it->second.error.empty()) return it->second;
    Address a;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(t.endpoint.host.c_str(), std::to_string(t.endpoint.port).c_str(), &hints, &res);
    if (rc != 0 || !res) {
      a.error = "cannot resolve host " + t.endpoint.host + ": " + ::gai_strerror(rc);
    } else {
      std::memcpy(&a.addr, res->ai_addr, res->ai_addrlen);
      a.len = res->ai_addrlen;
    }
    if (res) ::freeaddrinfo(res);
    return resolved[key] = a;
  }

  void Close(Conn* c) {
    if (c->fd >= 0) {
      ::epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, nullptr);
      ::close(c->fd);
    }
    if (c->state == Conn::State::kIdle) --idle;
    c->fd = -1;
    c->state = Conn::State::kClosed;
  }

  void Watch(Conn* c, size_t target, uint32_t events, bool add) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = target;
    ::epoll_ctl(epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
  }

  // Ends the current call of target `t` with `reply` and moves on.
  void Finish(size_t t, HttpReply reply) {
    Conn& c = targets[t].conn;
    reply.seconds = Seconds(Clock::now() - c.start);
    if (*on_reply) {
      (*on_reply)(static_cast<size_t>(c.call), &reply);
      Recycle(&reply.body);
    }
    (*replies)[c.call] = std::move(reply);
    c.call = -1;
    --in_flight;
    --remaining;
    if (!targets[t].queue.empty()) ready.push_back(t);
  }

  void Fail(size_t t, std::string why) {
    Close(&targets[t].conn);
    HttpReply r;
    r.error = std::move(why);
    Finish(t, std::move(r));
  }

  std::string RequestText(const Target& t, const HttpCall& call) const {
    std::string s;
    s.reserve(160 + call.path.size() + call.body.size());
    s += call.method;
    s += ' ';
    s += t.endpoint.path;
    s += call.path.empty() ? "/" : call.path;
    s += " HTTP/1.1\r\nHost: ";
    s += t.host_header;
    s += "\r\nContent-Length: ";
    s += std::to_string(call.body.size());
    s += "\r\nConnection: keep-alive\r\n";
    for (const auto& [k, v] : call.headers) s += k + ": " + v + "\r\n";
    s += "\r\n";
    s += call.body;
    return s;
  }

  // Opens a fresh connection for the current call of target `t`.
  bool Connect(size_t t) {
    Target& tg = targets[t];
    Conn& c = tg.conn;
    const Address& a = Resolve(tg);
    if (!a.error.empty()) {
      Fail(t, a.error);
      return false;
    }
    c.fd = ::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      Fail(t, std::string("socket: ") + std::strerror(errno));
      return false;
    }
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len);
    if (rc != 0 && errno != EINPROGRESS) {
      Fail(t, std::string("connect: ") + std::strerror(errno));
      return false;
    }
    c.state = rc == 0 ? Conn::State::kWriting : Conn::State::kConnecting;
    c.reused = false;
    Watch(&c, t, EPOLLOUT, /*add=*/true);
    return true;
  }

  void Start(size_t t) {
    Target& tg = targets[t];
    Conn& c = tg.conn;
    c.call = tg.queue.front();
    tg.queue.pop_front();
    ++in_flight;
    c.start = Clock::now();
    c.deadline = c.start + timeout;
    c.out = RequestText(tg, (*calls)[c.call]);
    c.out_off = 0;
    c.retried = false;
    NewReader(&c);
    if (c.state == Conn::State::kIdle) {
      --idle;
      c.state = Conn::State::kWriting;
      c.reused = true;
      // A kept-alive connection is writable nearly always: the request goes
      // out now, and the connection is still watched for reading as it was
      // while idle (two epoll_ctl calls a request saved).
      SendNow(t);
      return;
    }
    Connect(t);
  }

  // A kept-alive connection that the server had closed before our request
  // reached it: the request is sent again, once, on a new connection.
  // Returns false when that does not apply (the failure is real).
  bool RetryFresh(size_t t) {
    Conn& c = targets[t].conn;
    if (!c.reused || c.retried || c.reader.started()) return false;
    Close(&c);
    c.retried = true;
    c.out_off = 0;
    NewReader(&c);
    Connect(t);  // on failure it has failed the call itself
    return true;
  }

  void OnWritable(size_t t) {
    Conn& c = targets[t].conn;
    if (c.state == Conn::State::kConnecting) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        Fail(t, err == ECONNREFUSED ? "connection refused" : std::string("connect: ") + std::strerror(err));
        return;
      }
      c.state = Conn::State::kWriting;
    }
    if (Send(t)) Watch(&c, t, EPOLLIN | EPOLLRDHUP, /*add=*/false);
  }

  // Sends what is left of the request of target `t`; true when all of it
  // is out (the connection is then reading), false when the socket is full
  // or the call failed (then it has been failed or retried).
  bool Send(size_t t) {
    Conn& c = targets[t].conn;
    while (c.out_off < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) return false;
      if (n <= 0) {
        if (!RetryFresh(t)) Fail(t, std::string("send: ") + std::strerror(errno));
        return false;
      }
      c.out_off += static_cast<size_t>(n);
    }
    c.state = Conn::State::kReading;
    return true;
  }

  // Starts the request on kept-alive connection `t`, which epoll watches
  // for reading: when the request does not go out whole, for writing.
  void SendNow(size_t t) {
    Conn& c = targets[t].conn;
    if (Send(t)) return;
    if (c.call >= 0 && c.state == Conn::State::kWriting && c.fd >= 0) Watch(&c, t, EPOLLOUT, /*add=*/false);
  }

  void OnReadable(size_t t) {
    Conn& c = targets[t].conn;
    if (c.state == Conn::State::kIdle) {  // the server closed (or wrote to) an idle connection
      Close(&c);
      return;
    }
    GiveBuffer(&c);
    char buf[65536];
    for (int round = 0; round < 16; ++round) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      MessageReader::State st;
      if (n <= 0) {
        if (RetryFresh(t)) return;
        st = n == 0 ? c.reader.FeedEof() : MessageReader::State::kError;
        if (st != MessageReader::State::kDone) {
          Fail(t, n == 0 ? c.reader.error() : std::string("recv: ") + std::strerror(errno));
          return;
        }
      } else {
        st = c.reader.Feed(buf, static_cast<size_t>(n));
        if (st == MessageReader::State::kError) {
          Fail(t, "bad response: " + c.reader.error());
          return;
        }
      }
      if (st == MessageReader::State::kDone) {
        HttpReply r;
        r.status = c.reader.head().status;
        r.body = std::move(c.reader.body());
        bool keep = !c.reader.head().close && n > 0 && idle < opt.max_idle_connections;
        if (keep) {  // watched for reading already: a server closing it is seen
          c.state = Conn::State::kIdle;
          ++idle;
        } else {
          Close(&c);
        }
        Finish(t, std::move(r));
        return;
      }
    }
  }

  // Fails every call in flight or queued (Run's give_up).
  void GiveUp() {
    static const char kWhy[] = "not answered before the watch ended";
    for (size_t t = 0; t < targets.size(); ++t) {
      if (targets[t].conn.call >= 0) Fail(t, kWhy);
      for (int call : targets[t].queue) {
        (*replies)[call].error = kWhy;
        --remaining;
      }
      targets[t].queue.clear();
    }
    ready.clear();
  }

  void ExpireOverdue(Clock::time_point now) {
    for (size_t t = 0; t < targets.size(); ++t) {
      Conn& c = targets[t].conn;
      if (c.call >= 0 && now >= c.deadline) {
        double s = std::chrono::duration<double>(timeout).count();
        char what[64];
        std::snprintf(what, sizeof what, "no answer within %g s", s);
        Fail(t, c.state == Conn::State::kConnecting ? std::string(what) + " (connecting)" : what);
      }
    }
  }
};

HttpFanout::HttpFanout(FanoutOptions options) : impl_(std::make_unique<Impl>()) {
  RaiseFileLimit();
  impl_->opt = options;
  impl_->epfd = ::epoll_create1(EPOLL_CLOEXEC);
}

HttpFanout::~HttpFanout() {
  for (auto& t : impl_->targets) impl_->Close(&t.conn);
  if (impl_->epfd >= 0) ::close(impl_->epfd);
}

size_t HttpFanout::AddEndpoint(const Endpoint& endpoint) {
  Impl::Target t;
  t.endpoint = endpoint;
  bool v6 = endpoint.host.find(':') != std::string::npos;
  t.host_header = (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
  impl_->targets.push_back(std::move(t));
  return impl_->targets.size() - 1;
}

size_t HttpFanout::endpoints() const { return impl_->targets.size(); }

void HttpFanout::CloseIdle() {
  for (auto& t : impl_->targets)
    if (t.conn.state == Conn::State::kIdle) impl_->Close(&t.conn);
}

std::vector<HttpReply> HttpFanout::Run(const std::vector<HttpCall>& calls, std::chrono::milliseconds timeout,
                                       const OnReply& on_reply, const GiveUp& give_up) {
  Impl& m = *impl_;
  std::vector<HttpReply> replies(calls.size());
  m.calls = &calls;
  m.replies = &replies;
  m.on_reply = &on_reply;
  m.timeout = timeout;
  m.ready.clear();
  m.in_flight = 0;
  m.remaining = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].endpoint >= m.targets.size()) {
      replies[i].error = "unknown endpoint";
      continue;
    }
    auto& q = m.targets[calls[i].endpoint].queue;
    if (q.empty() && m.targets[calls[i].endpoint].conn.call < 0) m.ready.push_back(calls[i].endpoint);
    q.push_back(static_cast<int>(i));
    ++m.remaining;
  }
  if (m.epfd < 0) {
    for (auto& r : replies)
      if (r.error.empty()) r.error = "epoll unavailable";
    return replies;
  }
  std::vector<epoll_event> events(1024);
  Clock::time_point next_expiry = Clock::now() + std::chrono::milliseconds(5);
  while (m.remaining > 0) {
    while (!m.ready.empty() && m.in_flight < m.opt.max_in_flight) {
      size_t t = m.ready.front();
      m.ready.pop_front();
      if (m.targets[t].conn.call < 0 && !m.targets[t].queue.empty()) m.Start(t);
    }
    if (m.remaining == 0) break;
    int n = ::epoll_wait(m.epfd, events.data(), static_cast<int>(events.size()), 5);
    for (int i = 0; i < n; ++i) {
      size_t t = events[i].data.u64;
      Conn& c = m.targets[t].conn;
      uint32_t ev = events[i].events;
      if (c.state == Conn::State::kConnecting || c.state == Conn::State::kWriting) {
        if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) m.OnWritable(t);
      } else if (c.state == Conn::State::kReading || c.state == Conn::State::kIdle) {
        if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) m.OnReadable(t);
      }
    }
    Clock::time_point now = Clock::now();
    if (now >= next_expiry) {
      m.ExpireOverdue(now);
      next_expiry = now + std::chrono::milliseconds(5);
      if (m.remaining > 0 && give_up && give_up()) m.GiveUp();
    }
  }
  m.calls = nullptr;
  m.replies = nullptr;
  m.on_reply = nullptr;
  return replies;
}

}  // namespace hangdx::live
