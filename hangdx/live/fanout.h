// hangdx/live/fanout.h
// HttpFanout: many small HTTP/1.1 requests at once from one thread, each
// with a hard deadline. It is how `hangdx watch` probes thousands of
// workers every interval: non-blocking sockets and epoll, one keep-alive
// connection per endpoint, at most `max_in_flight` requests outstanding.
//
//   HttpFanout fan({});
//   size_t w = fan.AddEndpoint(*ParseUrl("http://node03:41873"));
//   auto replies = fan.Run({{w, "POST", "/handler/ping"}}, std::chrono::seconds(5));
//   replies[0].status == 200, replies[0].body == "pong"
//
// Why not a blocking client with a thread pool: a thread per outstanding
// request does not fit 10,000 workers on 2 cores, and a blocking client's
// timeout is per read, so a peer that trickles bytes is never cut off. Here
// a request that has no whole response by its deadline fails with status 0,
// whatever the peer does, and the connection is dropped.
//
// Not thread-safe: one Run at a time (a Watcher owns its fan-outs).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/live/http_wire.h"
#include "hangdx/live/url.h"

namespace hangdx::live {

struct FanoutOptions {
  size_t max_in_flight = 2048;                    // requests outstanding at once
  size_t max_response_bytes = size_t{512} << 20;  // a bigger body fails the request
  size_t max_idle_connections = 65536;            // keep-alive connections kept open
};

struct HttpCall {
  HttpCall() = default;
  HttpCall(size_t endpoint, std::string method, std::string path, std::string body = {})
      : endpoint(endpoint), method(std::move(method)), path(std::move(path)), body(std::move(body)) {}

  size_t endpoint = 0;  // from AddEndpoint
  std::string method = "POST";
  std::string path;  // appended to the endpoint's base path: "/handler/ping?x=1"
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
};

struct HttpReply {
  int status = 0;      // the HTTP status; 0: no response (see error)
  std::string body;    // the response body (any status)
  std::string error;   // why there is no response: "connection refused", "no answer within 5 s", ...
  double seconds = 0;  // from sending (or connecting) to the whole response or the failure
};

class HttpFanout {
 public:
  explicit HttpFanout(FanoutOptions options = {});
  ~HttpFanout();
  HttpFanout(const HttpFanout&) = delete;
  HttpFanout& operator=(const HttpFanout&) = delete;

  // Registers an endpoint; returns its id for HttpCall::endpoint. The host
  // name is resolved on the first request (and again after a failure).
  size_t AddEndpoint(const Endpoint& endpoint);
  size_t endpoints() const;

  // Called with each reply the moment it is complete (or has failed):
  // the index of its call and the reply, which it may change (e.g. take
  // the body). A caller that digests the bodies on arrival does not hold
  // a whole round of them at once: 10,000 answers of 59 KB are 590 MB. A
  // body it leaves empty gives its buffer back: the next responses are
  // read into it (no allocation per answer).
  using OnReply = std::function<void(size_t call, HttpReply* reply)>;

  // Asked every few milliseconds during a Run: true ends it at once (the
  // watch's --duration is over, or it was stopped).
  using GiveUp = std::function<bool()>;

  // Sends every call and waits for every reply, in the order of `calls`.
  // Calls to one endpoint go one after the other on its connection; each
  // call's `timeout` counts from when it is sent. `on_reply`, when given,
  // sees each reply as it arrives (on this thread). When `give_up` says so,
  // the calls still outstanding or not sent fail with the error "not
  // answered before the watch ended" (a round of 100,000 unreachable
  // workers takes longer than a short --duration). Never throws; failures
  // are replies with status 0.
  std::vector<HttpReply> Run(const std::vector<HttpCall>& calls, std::chrono::milliseconds timeout,
                             const OnReply& on_reply = nullptr, const GiveUp& give_up = nullptr);

  // Closes every idle connection (e.g. before a long pause).
  void CloseIdle();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hangdx::live
