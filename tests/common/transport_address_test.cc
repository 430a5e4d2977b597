#include "kturn/transport_address.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace kturn {
namespace {

TEST(TransportAddress, ParsesAndPrintsBothFamilies) {
  const auto v4 = TransportAddress::parse("192.0.2.1:3478");
  ASSERT_TRUE(v4);
  EXPECT_TRUE(v4->ip.isV4());
  EXPECT_EQ(v4->port, 3478);
  EXPECT_EQ(v4->toString(), "192.0.2.1:3478");
  const auto v6 = TransportAddress::parse("[2001:db8::1]:443");
  ASSERT_TRUE(v6);
  EXPECT_FALSE(v6->ip.isV4());
  EXPECT_EQ(v6->toString(), "[2001:db8::1]:443");
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:70000", "[::1:5", "300.1.1.1:1", "a:b"}) {
    EXPECT_FALSE(TransportAddress::parse(bad)) << bad;
  }
}

TEST(IpAddress, FamiliesNeverCompareEqual) {
  const auto v4 = *IpAddress::parse("0.0.0.0");
  const auto v6 = *IpAddress::parse("::");
  EXPECT_NE(v4, v6);
  EXPECT_TRUE(v4.isUnspecified());
  EXPECT_TRUE(v6.isUnspecified());
  EXPECT_EQ(IpAddress::v4(0x7f000001).toString(), "127.0.0.1");
}

TEST(FiveTuple, HashesDistinguishPortsAndProtocols) {
  FiveTuple a{TransportProtocol::kUdp, *TransportAddress::parse("10.0.0.1:1000"),
              *TransportAddress::parse("10.0.0.2:3478")};
  FiveTuple b = a;
  b.client.port = 1001;
  FiveTuple c = a;
  c.protocol = TransportProtocol::kTcp;
  std::unordered_set<FiveTuple> set{a, b, c};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_TRUE(set.contains(a));
}

}  // namespace
}  // namespace kturn
