// Choosing a relay address of the other family from the same interface.
#include "net/interface_addresses.h"

#include <gtest/gtest.h>

namespace kturn::net {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }

TEST(InterfaceAddresses, SiblingIsOnTheSameInterfaceAndNotLinkLocal) {
  const InterfaceAddresses table({{"lo", ip("127.0.0.1")},
                                  {"lo", ip("::1")},
                                  {"eth0", ip("fe80::1")},
                                  {"eth0", ip("192.0.2.10")},
                                  {"eth0", ip("2001:db8::10")},
                                  {"eth1", ip("198.51.100.1")}});
  EXPECT_EQ(table.sibling(ip("::1"), AddressFamily::kIPv4), ip("127.0.0.1"));
  EXPECT_EQ(table.sibling(ip("127.0.0.1"), AddressFamily::kIPv6), ip("::1"));
  EXPECT_EQ(table.sibling(ip("192.0.2.10"), AddressFamily::kIPv6), ip("2001:db8::10"))
      << "the link-local address listed first is skipped";
  EXPECT_EQ(table.sibling(ip("198.51.100.1"), AddressFamily::kIPv6), std::nullopt)
      << "no IPv6 on eth1";
  EXPECT_EQ(table.sibling(ip("203.0.113.1"), AddressFamily::kIPv6), std::nullopt)
      << "not an address of this host";
}

TEST(InterfaceAddresses, CurrentListsTheLoopbackAddresses) {
  const InterfaceAddresses now = InterfaceAddresses::current();
  bool v4 = false;
  for (const auto& e : now.entries()) v4 = v4 || e.ip == ip("127.0.0.1");
  EXPECT_TRUE(v4);
  EXPECT_EQ(now.sibling(ip("::1"), AddressFamily::kIPv4), ip("127.0.0.1"));
}

}  // namespace
}  // namespace kturn::net
