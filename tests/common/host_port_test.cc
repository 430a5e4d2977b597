// splitHostPort and parsePort (include/kturn/host_port.h): the one "host:port" splitter.
#include "kturn/host_port.h"

#include <gtest/gtest.h>

namespace kturn {
namespace {

TEST(SplitHostPort, HostAndPortWithAndWithoutBrackets) {
  auto v4 = splitHostPort("10.0.0.1:3478");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "10.0.0.1");
  EXPECT_EQ(v4->port, "3478");
  auto v6 = splitHostPort("[fd00::1]:443");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "fd00::1");
  EXPECT_EQ(v6->port, "443");
  auto name = splitHostPort("turn.example.com");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->host, "turn.example.com");
  EXPECT_FALSE(name->port);
  auto bracketed = splitHostPort("[::1]");
  ASSERT_TRUE(bracketed);
  EXPECT_EQ(bracketed->host, "::1");
  EXPECT_FALSE(bracketed->port);
  // An empty port and an empty host are the caller's to judge.
  auto empty_port = splitHostPort("host:");
  ASSERT_TRUE(empty_port);
  EXPECT_EQ(empty_port->port, "");
  auto any_host = splitHostPort(":13478");
  ASSERT_TRUE(any_host);
  EXPECT_EQ(any_host->host, "");
  EXPECT_EQ(any_host->port, "13478");
  // Without brackets the last ':' splits.
  auto bare = splitHostPort("::1:80");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->host, "::1");
  EXPECT_EQ(bare->port, "80");
}

TEST(SplitHostPort, AnUnclosedBracketOrJunkAfterItIsMalformed) {
  auto unclosed = splitHostPort("[fd00::1:443");
  ASSERT_FALSE(unclosed);
  EXPECT_EQ(unclosed.error().message, "missing ']'");
  auto junk = splitHostPort("[fd00::1]x443");
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error().message, "junk after ']'");
}

TEST(ParsePort, DecimalDigitsUpTo65535Only) {
  EXPECT_EQ(parsePort("0"), 0);
  EXPECT_EQ(parsePort("3478"), 3478);
  EXPECT_EQ(parsePort("65535"), 65535);
  for (const char* bad : {"", "65536", "99999999999", "-1", "+1", " 1", "1 ", "1x", "0x10"}) {
    EXPECT_FALSE(parsePort(bad)) << bad;
  }
}

}  // namespace
}  // namespace kturn
