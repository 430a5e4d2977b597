#include "config/endpoint.h"

#include <gtest/gtest.h>

namespace kturn::config {
namespace {

TransportAddress peer(std::string_view ip, uint16_t port) {
  return TransportAddress{.ip = *IpAddress::parse(ip), .port = port};
}

// The cases of STUNner's internal/util/endpoint_test.go: input, canonical output, prefix, range.
struct ParseCase {
  std::string_view input;
  std::string_view output;
  std::string_view prefix;
  int prefix_len;
  int min_port;
  int max_port;
};

class EndpointParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(EndpointParseTest, ParsesLikeStunner) {
  const ParseCase& c = GetParam();
  auto ep = parseEndpoint(c.input);
  ASSERT_TRUE(ep) << ep.error().message;
  EXPECT_EQ(ep->prefix.toString(), c.prefix);
  EXPECT_EQ(ep->prefix_len, c.prefix_len);
  EXPECT_EQ(ep->min_port, c.min_port);
  EXPECT_EQ(ep->max_port, c.max_port);
  EXPECT_EQ(ep->toString(), c.output);
}

INSTANTIATE_TEST_SUITE_P(
    Stunner, EndpointParseTest,
    ::testing::Values(ParseCase{"1.2.3.4/16:<1-2>", "1.2.0.0/16:<1-2>", "1.2.0.0", 16, 1, 2},
                      ParseCase{"1.2.3.4/16", "1.2.0.0/16", "1.2.0.0", 16, 1, 65535},
                      ParseCase{"1.2.3.4:<1-2>", "1.2.3.4:<1-2>", "1.2.3.4", 32, 1, 2},
                      ParseCase{"1.2.3.4", "1.2.3.4", "1.2.3.4", 32, 1, 65535},
                      ParseCase{"2001:db8:3333:4444:5555:6666:7777:8888/32:<1-2>",
                                "2001:db8::/32:<1-2>", "2001:db8::", 32, 1, 2},
                      ParseCase{"2001:db8:3333:4444:5555:6666:7777:8888/32", "2001:db8::/32",
                                "2001:db8::", 32, 1, 65535},
                      ParseCase{"2001:db8:3333:4444:5555:6666:7777:8888:<1-2>",
                                "2001:db8:3333:4444:5555:6666:7777:8888:<1-2>",
                                "2001:db8:3333:4444:5555:6666:7777:8888", 128, 1, 2},
                      ParseCase{"2001:db8:3333:4444:5555:6666:7777:8888",
                                "2001:db8:3333:4444:5555:6666:7777:8888",
                                "2001:db8:3333:4444:5555:6666:7777:8888", 128, 1, 65535},
                      ParseCase{"0.0.0.0/0", "0.0.0.0/0", "0.0.0.0", 0, 1, 65535},
                      ParseCase{"10.0.0.0/8:<1000-2000>", "10.0.0.0/8:<1000-2000>", "10.0.0.0", 8,
                                1000, 2000},
                      ParseCase{"::1/128", "::1/128", "::1", 128, 1, 65535},
                      ParseCase{"::/0:<0-65535>", "::/0:<0-65535>", "::", 0, 0, 65535},
                      ParseCase{"10.1.2.3/31", "10.1.2.2/31", "10.1.2.2", 31, 1, 65535}));

TEST(EndpointParse, RejectsInvalid) {
  for (std::string_view bad :
       {"", ":<1-65535>", "dummy", "10.0.0.300", "10.0.0.0/33", "::/129", "10.0.0.0/", "/8",
        "10.0.0.0/-1", "10.0.0.0/8x", "10.0.0.1:<2000-1000>", "10.0.0.1:<1-70000>", "10.0.0.1:<1-2",
        "10.0.0.1:1000", "[::1]", "fe80::1%eth0", " 10.0.0.1", "10.0.0.1 ", "010.0.0.1"}) {
    EXPECT_FALSE(parseEndpoint(bad)) << bad;
  }
}

TEST(EndpointParse, ErrorNamesTheText) {
  auto ep = parseEndpoint("10.0.0.300");
  ASSERT_FALSE(ep);
  EXPECT_EQ(ep.error().message, "invalid address \"10.0.0.300\"");
  auto range = parseEndpoint("10.0.0.1:<9-1>");
  ASSERT_FALSE(range);
  EXPECT_EQ(range.error().message, "invalid port range \":<9-1>\": min > max");
}

TEST(EndpointContains, IPv4Prefix) {
  auto ep = parseEndpoint("1.2.3.4/16:<1-2>");
  ASSERT_TRUE(ep);
  EXPECT_TRUE(ep->contains(peer("1.2.3.5", 1)));
  EXPECT_TRUE(ep->contains(peer("1.2.255.255", 2)));
  EXPECT_FALSE(ep->contains(peer("1.2.4.6", 3)));  // in prefix, port outside
  EXPECT_TRUE(ep->containsAddress(*IpAddress::parse("1.2.4.6")));
  EXPECT_FALSE(ep->contains(peer("1.3.3.4", 1)));
  EXPECT_FALSE(ep->containsAddress(*IpAddress::parse("1.3.3.4")));
}

TEST(EndpointContains, SingleHostAnyPort) {
  auto ep = parseEndpoint("10.0.0.1");
  ASSERT_TRUE(ep);
  EXPECT_TRUE(ep->contains(peer("10.0.0.1", 1)));
  EXPECT_TRUE(ep->contains(peer("10.0.0.1", 65535)));
  EXPECT_FALSE(ep->contains(peer("10.0.0.1", 0)));  // STUNner's default range starts at 1
  EXPECT_FALSE(ep->contains(peer("10.0.0.2", 5000)));
}

TEST(EndpointContains, FamiliesNeverMix) {
  auto any4 = parseEndpoint("0.0.0.0/0");
  auto any6 = parseEndpoint("::/0");
  ASSERT_TRUE(any4 && any6);
  EXPECT_TRUE(any4->contains(peer("203.0.113.9", 4000)));
  EXPECT_FALSE(any4->contains(peer("::1", 4000)));
  EXPECT_FALSE(any4->contains(peer("::ffff:10.0.0.1", 4000)));
  EXPECT_TRUE(any6->contains(peer("2001:db8::1", 4000)));
  EXPECT_FALSE(any6->contains(peer("10.0.0.1", 4000)));
}

TEST(EndpointContains, IPv6PrefixAndRange) {
  auto ep = parseEndpoint("2001:db8::/33:<5000-5001>");
  ASSERT_TRUE(ep);
  EXPECT_TRUE(ep->contains(peer("2001:db8:7fff::1", 5000)));
  EXPECT_TRUE(ep->contains(peer("2001:db8::", 5001)));
  EXPECT_FALSE(ep->contains(peer("2001:db8:8000::1", 5000)));  // bit 33 set
  EXPECT_FALSE(ep->contains(peer("2001:db8::1", 5002)));
}

TEST(EndpointContains, ZeroLengthPrefixMatchesWholeFamily) {
  auto ep = parseEndpoint("192.168.1.1/0");
  ASSERT_TRUE(ep);
  EXPECT_EQ(ep->prefix.toString(), "0.0.0.0");
  EXPECT_TRUE(ep->contains(peer("8.8.8.8", 53)));
}

TEST(DnsEndpoint, ParsesHostAndOptionalRange) {
  auto plain = parseDnsEndpoint("media.default.svc.cluster.local");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->host, "media.default.svc.cluster.local");
  EXPECT_EQ(plain->min_port, 1);
  EXPECT_EQ(plain->max_port, 65535);

  auto ranged = parseDnsEndpoint("media:<10000-20000>");
  ASSERT_TRUE(ranged);
  EXPECT_EQ(ranged->host, "media");
  EXPECT_EQ(ranged->min_port, 10000);
  EXPECT_EQ(ranged->max_port, 20000);

  for (std::string_view bad : {"", ":<1-2>", "a b", "host/8", "host:<2-1>"}) {
    EXPECT_FALSE(parseDnsEndpoint(bad)) << bad;
  }
}

// Found by config_fuzz: a name with bytes that are not UTF-8 validated, but its JSON form (each
// bad byte replaced by U+FFFD) did not, so the config CDS served would have been refused.
TEST(DnsEndpoint, ANameThatIsNotUtf8IsInvalid) {
  // (A hex escape takes every hex digit after it: the string is split where letters follow.)
  EXPECT_FALSE(
      parseDnsEndpoint("media.lo\xE7\xE7"
                       "cal"));
  EXPECT_FALSE(parseDnsEndpoint("media\xFF:<1-2>"));
  EXPECT_TRUE(
      parseDnsEndpoint("m\xC3\xA9"
                       "dia.example"));  // UTF-8 passes through, as in Go
}

}  // namespace
}  // namespace kturn::config
