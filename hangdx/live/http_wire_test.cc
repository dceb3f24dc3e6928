#include "hangdx/live/http_wire.h"

#include <gtest/gtest.h>

namespace hangdx::live {
namespace {

using State = MessageReader::State;

TEST(HttpWireTest, ResponseWithContentLengthByteByByte) {
  std::string msg = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nKeep-Alive: timeout=5, max=5\r\n\r\npongHTTP/1.1 404";
  MessageReader r(MessageReader::Kind::kResponse, {});
  State st = State::kNeedMore;
  size_t i = 0;
  for (; i < msg.size() && st == State::kNeedMore; ++i) st = r.Feed(&msg[i], 1);
  ASSERT_EQ(st, State::kDone);
  EXPECT_EQ(r.head().status, 200);
  EXPECT_EQ(r.body(), "pong");
  EXPECT_FALSE(r.head().close);
  EXPECT_EQ(r.head().Header("keep-alive"), "timeout=5, max=5");
  r.Feed(msg.data() + i, msg.size() - i);
  EXPECT_EQ(r.Next(), State::kNeedMore);  // the next response has begun
}

TEST(HttpWireTest, ChunkedAndUntilClose) {
  MessageReader r(MessageReader::Kind::kResponse, {});
  std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
  ASSERT_EQ(r.Feed(chunked.data(), chunked.size()), State::kDone);
  EXPECT_EQ(r.body(), "abcde");
  MessageReader e(MessageReader::Kind::kResponse, {});
  std::string eof = "HTTP/1.0 200 OK\r\n\r\nall of it";
  EXPECT_EQ(e.Feed(eof.data(), eof.size()), State::kNeedMore);
  EXPECT_EQ(e.FeedEof(), State::kDone);
  EXPECT_EQ(e.body(), "all of it");
  EXPECT_TRUE(e.head().close);
}

TEST(HttpWireTest, RequestHeadAndLimits) {
  MessageReader r(MessageReader::Kind::kRequest, {64, 8});
  std::string req = "POST /handler/ping?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(r.Feed(req.data(), req.size()), State::kDone);
  EXPECT_EQ(r.head().method, "POST");
  EXPECT_EQ(r.head().target, "/handler/ping?x=1");
  MessageReader big(MessageReader::Kind::kRequest, {64, 8});
  std::string body = "POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n";
  EXPECT_EQ(big.Feed(body.data(), body.size()), State::kError);
  MessageReader head(MessageReader::Kind::kRequest, {64, 8});
  std::string longhead(100, 'x');
  EXPECT_EQ(head.Feed(longhead.data(), longhead.size()), State::kError);
  MessageReader bad(MessageReader::Kind::kResponse, {});
  std::string junk = "SSH-2.0-OpenSSH\r\n\r\n";
  EXPECT_EQ(bad.Feed(junk.data(), junk.size()), State::kError);
  MessageReader cut(MessageReader::Kind::kResponse, {});
  std::string part = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  EXPECT_EQ(cut.Feed(part.data(), part.size()), State::kNeedMore);
  EXPECT_EQ(cut.FeedEof(), State::kError);
}

}  // namespace
}  // namespace hangdx::live
