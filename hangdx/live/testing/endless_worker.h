// hangdx/live/testing/endless_worker.h
// EndlessWorker: a hostile "worker" on a loopback port for the tests. To
// every request it answers "200 OK" with a chunked body that never ends
// (64 KiB chunks of '{'), until the client closes; `sent()` is how many
// body bytes it wrote, so a test sees where the client stopped reading.
// (The new-user tester's badworker.py "chunked", in C++.)
//
//   testing::EndlessWorker bad;
//   ASSERT_TRUE(bad.Start().ok());
//   bad.Url() == "http://127.0.0.1:40163"
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "hangdx/base/status.h"

namespace hangdx::live::testing {

class EndlessWorker {
 public:
  EndlessWorker() = default;
  ~EndlessWorker() { Stop(); }
  EndlessWorker(const EndlessWorker&) = delete;
  EndlessWorker& operator=(const EndlessWorker&) = delete;

  // Binds an ephemeral loopback port and serves on a thread. Errors (kIo).
  Status Start() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return IoError("EndlessWorker: cannot listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
    return Status::Ok();
  }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  size_t sent() const { return sent_; }
  int connections() const { return connections_; }

 private:
  // One connection at a time is enough for a test: read the request, then
  // write chunks until the peer goes away (or Stop).
  void Serve() {
    std::string chunk = "10000\r\n" + std::string(0x10000, '{') + "\r\n";
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      char buf[4096];
      (void)::recv(c, buf, sizeof buf, 0);
      static const char kHead[] =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      bool ok = ::send(c, kHead, sizeof kHead - 1, MSG_NOSIGNAL) > 0;
      while (ok && !stop_) {
        pollfd w{c, POLLOUT, 0};
        if (::poll(&w, 1, 50) != 1) continue;
        ssize_t n = ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL);
        ok = n > 0;
        if (ok) sent_ += static_cast<size_t>(n);
      }
      ::close(c);
    }
  }

  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> sent_{0};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace hangdx::live::testing
