// RFC 8656 §21 peer restrictions: a catch-all cluster does not open the server's own host, link-
// local and metadata addresses, multicast or tunnel prefixes; an endpoint inside such a range
// does admit it; private ranges stay ordinary peers.
#include "turn/restricted_peers.h"

#include <gtest/gtest.h>

#include "turn/server_config.h"

namespace kturn::turn {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }
TransportAddress ta(const char* text) { return *TransportAddress::parse(text); }

ListenerPolicy catchAll() {
  ListenerPolicy p;
  p.peers.push_back({ip("0.0.0.0"), 0, 1, 65535});
  p.peers.push_back({ip("::"), 0, 1, 65535});
  p.own_addresses.push_back(ta("0.0.0.0:3478"));
  return p;
}

TEST(RestrictedPeers, CatchAllClusterRefusesRestrictedAddresses) {
  const ListenerPolicy p = catchAll();
  for (const char* addr :
       {"127.0.0.1", "127.1.2.3", "0.0.0.0", "169.254.169.254", "169.254.1.1", "224.0.0.1",
        "255.255.255.255", "192.88.99.1", "::1", "::", "::ffff:127.0.0.1", "::127.0.0.1", "fe80::1",
        "ff02::1", "fd00:ec2::254", "2002:7f00:1::1", "2001:0:4136:e378::1"}) {
    EXPECT_FALSE(p.allowsIp(ip(addr))) << addr;
    EXPECT_FALSE(p.allows({ip(addr), 5000})) << addr;
  }
}

TEST(RestrictedPeers, PrivateAndPublicRangesAreOrdinaryPeers) {
  const ListenerPolicy p = catchAll();
  for (const char* addr : {"10.1.2.3", "172.16.0.1", "192.168.1.1", "203.0.113.9", "fd00::1",
                           "fd12:3456::1", "2001:db8::1", "::ffff:10.0.0.1"}) {
    EXPECT_TRUE(p.allowsIp(ip(addr))) << addr;
  }
}

TEST(RestrictedPeers, AnEndpointInsideTheRestrictedRangeAdmitsIt) {
  ListenerPolicy p;
  p.peers.push_back({ip("127.0.0.1"), 32, 1, 65535});
  p.own_addresses.push_back(ta("127.0.0.1:3478"));
  EXPECT_TRUE(p.allows(ta("127.0.0.1:40000")));
  EXPECT_FALSE(p.allows(ta("127.0.0.2:40000")));  // not in the endpoint
  // ...but never the server's own listener: no TURN-in-TURN loop.
  EXPECT_FALSE(p.allows(ta("127.0.0.1:3478")));
  EXPECT_EQ(p.admittingAllPorts(ip("127.0.0.1")), nullptr);
  EXPECT_TRUE(p.allowsIp(ip("127.0.0.1")));
}

TEST(RestrictedPeers, WildcardListenerProtectsLoopbackOnItsPort) {
  ListenerPolicy p;
  p.peers.push_back({ip("127.0.0.0"), 8, 1, 65535});
  p.own_addresses.push_back(ta("0.0.0.0:3478"));
  EXPECT_FALSE(p.allows(ta("127.0.0.1:3478")));
  EXPECT_TRUE(p.allows(ta("127.0.0.1:3479")));
}

TEST(RestrictedPeers, RangesOfMappedAndCompatibleAddresses) {
  EXPECT_EQ(restrictedRangeOf(ip("::ffff:127.0.0.1"))->length, 96);
  EXPECT_FALSE(restrictedRangeOf(ip("::ffff:8.8.8.8")));
  EXPECT_EQ(restrictedRangeOf(ip("127.0.0.1"))->length, 8);
  EXPECT_EQ(restrictedRangeOf(ip("169.254.169.254"))->length, 16);
}

}  // namespace
}  // namespace kturn::turn
