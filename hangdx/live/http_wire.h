// hangdx/live/http_wire.h
// The HTTP/1.1 message framing that hangdx's own non-blocking sockets need:
// the fan-out client (fanout.h) reading worker responses and the fake
// worker fleet (testing/fake_workers.h) reading requests. The service that
// ranks push to is served by cpp-httplib instead (http_server.h).
//
//   MessageReader r(MessageReader::Kind::kResponse, limits);
//   while (r.Feed(buf, n) == MessageReader::State::kNeedMore) { ...read more... }
//   r.head().status, r.body()
//
// What is read: a start line, headers (names case-insensitive), then a body
// framed by Content-Length, by chunked transfer coding, or (responses only)
// by the end of the connection. Everything is bounded: a head or a body over
// its limit is an error, never an allocation without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hangdx::live {

struct HttpHead {
  int status = 0;      // responses: 200, 404, ...
  std::string method;  // requests: "GET", "POST"
  std::string target;  // requests: "/handler/ping?x=1"
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t content_length = -1;  // -1: not given
  bool chunked = false;
  bool close = false;  // "Connection: close", or HTTP/1.0 without keep-alive

  // The first value of header `name` (case-insensitive), "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct MessageLimits {
  size_t max_head_bytes = 16 * 1024;
  size_t max_body_bytes = size_t{256} << 20;
};

// Incremental reader of one HTTP/1.1 message at a time. Not thread-safe.
class MessageReader {
 public:
  enum class Kind { kRequest, kResponse };
  enum class State { kNeedMore, kDone, kError };

  MessageReader(Kind kind, MessageLimits limits) : kind_(kind), limits_(limits) {}

  // Appends `n` bytes; returns kDone once a whole message is there (bytes
  // after it are kept for the next message), kError with error() set on a
  // malformed or oversized message.
  State Feed(const char* data, size_t n);
  // The peer closed the connection: completes a response framed by the end
  // of the connection, else an error (a message cut short).
  State FeedEof();

  const HttpHead& head() const { return head_; }
  std::string& body() { return body_; }
  const std::string& error() const { return error_; }
  // True once any byte of the current message arrived.
  bool started() const { return !buf_.empty() || head_done_; }
  // Forgets the finished message and starts on the bytes that followed it.
  State Next();
  // Reads the next message into `buffer`'s memory (its text is dropped):
  // a caller that reads many bodies of one size reuses their buffers
  // instead of allocating 59 KB for each (HttpFanout). Before any Feed.
  void Recycle(std::string buffer) {
    buffer.clear();
    buf_ = std::move(buffer);
  }

 private:
  State Parse();
  bool ParseHead(std::string_view text);
  State ParseChunks();

  Kind kind_;
  MessageLimits limits_;
  std::string buf_;  // unconsumed bytes
  HttpHead head_;
  std::string body_;
  std::string error_;
  bool head_done_ = false;
  bool done_ = false;
  bool until_eof_ = false;
};

// Case-insensitive ASCII comparison (header names, tokens).
bool EqualsNoCase(std::string_view a, std::string_view b);

}  // namespace hangdx::live
