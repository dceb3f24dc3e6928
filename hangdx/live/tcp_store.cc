#include "hangdx/live/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hangdx::live {
namespace {

// c10d::detail::QueryType (TCPStoreBackend.hpp): the values this reader sends.
constexpr uint8_t kValidate = 0, kCheck = 5, kMultiGet = 10, kPing = 13;
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint64_t kMaxValueBytes = 1 << 20;  // a worker address is a short URL

void AppendU64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void AppendU32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void AppendKey(std::string* s, const std::string& key) {
  AppendU64(s, key.size() + 1);
  s->push_back('/');  // TCPStore::keyPrefix_
  *s += key;
}

int ConnectTo(const Endpoint& e, std::chrono::milliseconds timeout, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &res);
  if (rc != 0) {
    *why = "cannot resolve " + e.host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      *why = std::strerror(errno);
      ::close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      *why = err ? std::strerror(err) : "no connection within " + std::to_string(timeout.count()) + " ms";
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

}  // namespace

StatusOr<TcpStoreReader> TcpStoreReader::Connect(const Endpoint& store, std::chrono::milliseconds timeout) {
  std::string why;
  int fd = ConnectTo(store, timeout, &why);
  if (fd < 0) return IoError("TCPStore " + store.host + ":" + std::to_string(store.port) + ": " + why);
  TcpStoreReader r(fd, timeout);
  std::string hello(1, static_cast<char>(kValidate));
  AppendU32(&hello, kValidationMagic);
  HANGDX_RETURN_IF_ERROR(r.Send(hello));
  // The server answers nothing to VALIDATE; a ping proves it is a TCPStore.
  HANGDX_RETURN_IF_ERROR(r.Ping());
  return r;
}

TcpStoreReader::TcpStoreReader(TcpStoreReader&& o) noexcept : fd_(o.fd_), timeout_(o.timeout_) { o.fd_ = -1; }

TcpStoreReader& TcpStoreReader::operator=(TcpStoreReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    timeout_ = o.timeout_;
    o.fd_ = -1;
  }
  return *this;
}

TcpStoreReader::~TcpStoreReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status TcpStoreReader::Send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout_.count())) == 1) continue;
    }
    return IoError("TCPStore: cannot send: " + std::string(n < 0 ? std::strerror(errno) : "timed out"));
  }
  return Status::Ok();
}

Status TcpStoreReader::Receive(void* out, size_t n) {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  char* p = static_cast<char*>(out);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd_, p + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return IoError("TCPStore: the server closed the connection");
    if (errno != EAGAIN && errno != EINTR) return IoError(std::string("TCPStore: ") + std::strerror(errno));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pf{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pf, 1, static_cast<int>(left.count())) != 1)
      return IoError("TCPStore: no answer within " + std::to_string(timeout_.count()) + " ms");
  }
  return Status::Ok();
}

StatusOr<std::string> TcpStoreReader::ReceiveString() {
  unsigned char len_bytes[8];
  HANGDX_RETURN_IF_ERROR(Receive(len_bytes, 8));
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  if (len > kMaxValueBytes) return IoError("TCPStore: a value of " + std::to_string(len) + " bytes: not an address");
  std::string s(len, '\0');
  if (len) HANGDX_RETURN_IF_ERROR(Receive(s.data(), len));
  return s;
}

StatusOr<std::vector<std::string>> TcpStoreReader::MultiGet(const std::vector<std::string>& keys) {
  std::string req(1, static_cast<char>(kMultiGet));
  AppendU64(&req, keys.size());
  for (const auto& k : keys) AppendKey(&req, k);
  HANGDX_RETURN_IF_ERROR(Send(req));
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    HANGDX_ASSIGN_OR_RETURN(std::string v, ReceiveString());
    out.push_back(std::move(v));
  }
  return out;
}

StatusOr<bool> TcpStoreReader::Check(const std::vector<std::string>& keys) {
  std::string req(1, static_cast<char>(kCheck));
  AppendU64(&req, keys.size());
  for (const auto& k : keys) AppendKey(&req, k);
  HANGDX_RETURN_IF_ERROR(Send(req));
  uint8_t answer = 0;
  HANGDX_RETURN_IF_ERROR(Receive(&answer, 1));
  if (answer > 1) return IoError("TCPStore: CHECK answered " + std::to_string(answer));
  return answer == 0;
}

Status TcpStoreReader::Ping() {
  uint32_t nonce = static_cast<uint32_t>(::getpid()) ^ 0x68616e67;  // "hang"
  std::string req(1, static_cast<char>(kPing));
  AppendU32(&req, nonce);
  HANGDX_RETURN_IF_ERROR(Send(req));
  unsigned char b[4];
  HANGDX_RETURN_IF_ERROR(Receive(b, 4));
  uint32_t back = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  if (back != nonce) return IoError("TCPStore: PING answered another nonce: not a TCPStore server?");
  return Status::Ok();
}

StatusOr<std::map<int64_t, std::string>> ReadWorkerAddresses(const Endpoint& store, int64_t world_size,
                                                             const std::string& prefix,
                                                             std::chrono::milliseconds timeout) {
  HANGDX_ASSIGN_OR_RETURN(TcpStoreReader reader, TcpStoreReader::Connect(store, timeout));
  std::map<int64_t, std::string> out;
  constexpr int64_t kBatch = 1024;  // keys per MULTI_GET
  for (int64_t first = 0; first < world_size; first += kBatch) {
    std::vector<std::string> keys;
    for (int64_t r = first; r < std::min(world_size, first + kBatch); ++r)
      keys.push_back((prefix.empty() ? "" : prefix + "/") + "rank" + std::to_string(r));
    HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> values, reader.MultiGet(keys));
    for (size_t i = 0; i < values.size(); ++i)
      if (!values[i].empty()) out[first + static_cast<int64_t>(i)] = std::move(values[i]);
  }
  return out;
}

}  // namespace hangdx::live
