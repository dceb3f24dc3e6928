#include "hangdx/live/url.h"

#include <gtest/gtest.h>

namespace hangdx::live {
namespace {

TEST(UrlTest, ParsesWhatTorchWritesIntoTheStore) {
  auto e = ParseUrl("http://node03:41873");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "node03");
  EXPECT_EQ(e->port, 41873);
  EXPECT_EQ(e->path, "");
  EXPECT_EQ(e->Url(), "http://node03:41873");
}

TEST(UrlTest, Ipv6AndBasePath) {
  auto e = ParseUrl("http://[::1]:8080/proxy/rank3/");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->path, "/proxy/rank3");
  EXPECT_EQ(e->Url(), "http://[::1]:8080/proxy/rank3");
}

TEST(UrlTest, RefusesWhatCannotBeSpoken) {
  EXPECT_FALSE(ParseUrl("https://node:1").ok());
  EXPECT_FALSE(ParseUrl("http://node").ok());
  EXPECT_FALSE(ParseUrl("http://node:0").ok());
  EXPECT_FALSE(ParseUrl("http://node:70000").ok());
  EXPECT_FALSE(ParseUrl("http://:80").ok());
  // A space or control byte would end the request line (a URL from the store is anyone's).
  EXPECT_FALSE(ParseUrl("http://node:1/a\r\nX-Injected: 1").ok());
  EXPECT_FALSE(ParseUrl("http://node:1/a b").ok());
  EXPECT_FALSE(ParseUrl(std::string("http://node:1/\0", 15)).ok());
  EXPECT_FALSE(ParseHostPort("localhost").ok());
  EXPECT_FALSE(ParseHostPort("[::1]80").ok());
  auto hp = ParseHostPort("127.0.0.1:29500");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->port, 29500);
}

}  // namespace
}  // namespace hangdx::live
