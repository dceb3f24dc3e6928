// hangdx/live/http_server.h
// HttpServer: the HTTP service of `hangdx watch --listen` (pushed reports,
// /findings, /status, /metrics), on cpp-httplib (Debian libcpp-httplib-dev;
// this is the only file that includes it). The handler is a plain function
// of a request, tested without sockets (service_test.cc); this file only
// serves it, hardened against hostile clients:
//
//  * a body over `max_body_bytes` is refused with 413 before it is read;
//  * each request (head and body) must arrive within `request_timeout`,
//    however slowly its bytes trickle in (slowloris): cpp-httplib's own
//    timeout is per read, so the socket is wrapped in a stream with one
//    deadline per request, and a late request is dropped and counted;
//  * at most `threads` requests are served at once and `max_queued` wait;
//    past that a connection gets 503 at once instead of waiting;
//  * a connection between requests (before its first, or kept alive after
//    an answer) holds no thread and no queue place: it waits on one epoll
//    thread until its next request's bytes arrive, at most
//    `max_idle_per_client` per client address and `max_idle` in all (past
//    either, the oldest idle one is closed). So silent connections, however
//    many, cannot lock /healthz out;
//  * a handler that throws answers 500; nothing a client sends ends the
//    process.
//
// Every refusal the server makes itself calls `on_reject(reason)` (an
// answer the handler made is the handler's to count): "too_large" (413),
// "malformed" (400, 414, 431), "timeout", "overloaded" (503), "error"
// (500, a handler that threw). RejectReason names the others: "unauthorized"
// (401), "not_found" (404, 405).
//
//   auto server = HttpServer::Start({.host = "127.0.0.1", .port = 0}, handler, on_reject);
//   (*server)->port() -> the bound port
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/base/status.h"

namespace hangdx::live {

struct HttpRequest {
  std::string method;  // "GET", "POST"
  std::string path;    // without the query
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> params;  // query parameters
  std::string body;
  std::string remote;  // "127.0.0.1:50312"

  // The first value of header `name` (case-insensitive), "" when absent.
  std::string Header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port (see HttpServer::port)
  size_t max_body_bytes = size_t{16} << 20;
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds keep_alive_timeout{5000};
  int keep_alive_max = 100;
  int threads = 8;
  int max_queued = 256;
  int max_idle_per_client = 64;  // idle connections of one client address
  int max_idle = 4096;           // idle connections in all
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using RejectCounter = std::function<void(const std::string& reason)>;

  // Binds and starts serving on a thread of its own. Errors (kIo): the
  // address cannot be bound.
  static StatusOr<std::unique_ptr<HttpServer>> Start(const ServerOptions& options, Handler handler,
                                                     RejectCounter on_reject);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  void Stop();

  // The reason counted for a response status (above), "" for a success.
  static std::string RejectReason(int status);

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hangdx::live
