#include "net/sockaddr.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

namespace kturn::net {
namespace {

TEST(SockaddrTest, Ipv4RoundTrip) {
  const TransportAddress address = *TransportAddress::parse("192.0.2.10:3478");
  sockaddr_storage ss;
  ASSERT_EQ(toSockaddr(address, ss), sizeof(sockaddr_in));
  const auto* sin = reinterpret_cast<const sockaddr_in*>(&ss);
  EXPECT_EQ(sin->sin_family, AF_INET);
  EXPECT_EQ(sin->sin_port, htons(3478));
  EXPECT_EQ(sin->sin_addr.s_addr, inet_addr("192.0.2.10"));
  EXPECT_EQ(fromSockaddr(reinterpret_cast<const sockaddr*>(&ss)), address);
}

TEST(SockaddrTest, Ipv6RoundTrip) {
  const TransportAddress address = *TransportAddress::parse("[2001:db8::1:2]:65535");
  sockaddr_storage ss;
  ASSERT_EQ(toSockaddr(address, ss), sizeof(sockaddr_in6));
  const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  EXPECT_EQ(sin6->sin6_family, AF_INET6);
  EXPECT_EQ(sin6->sin6_port, htons(65535));
  EXPECT_EQ(sin6->sin6_scope_id, 0u);
  in6_addr expected;
  ASSERT_EQ(inet_pton(AF_INET6, "2001:db8::1:2", &expected), 1);
  EXPECT_EQ(std::memcmp(&sin6->sin6_addr, &expected, 16), 0);
  EXPECT_EQ(fromSockaddr(reinterpret_cast<const sockaddr*>(&ss)), address);
}

TEST(SockaddrTest, Ipv4MappedIpv6StaysIpv6) {
  const TransportAddress address = *TransportAddress::parse("[::ffff:198.51.100.7]:1000");
  ASSERT_EQ(address.family(), AddressFamily::kIPv6);
  sockaddr_storage ss;
  ASSERT_EQ(toSockaddr(address, ss), sizeof(sockaddr_in6));
  const TransportAddress back = fromSockaddr(reinterpret_cast<const sockaddr*>(&ss));
  EXPECT_EQ(back.family(), AddressFamily::kIPv6);
  EXPECT_EQ(back, address);
}

TEST(SockaddrTest, OverwritesStaleBytes) {
  sockaddr_storage ss;
  std::memset(&ss, 0xab, sizeof ss);
  toSockaddr(*TransportAddress::parse("[::1]:9"), ss);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_flowinfo, 0u);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_scope_id, 0u);
}

TEST(SockaddrTest, OtherFamilyGivesDefaultAddress) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_EQ(fromSockaddr(reinterpret_cast<const sockaddr*>(&un)), TransportAddress{});
  EXPECT_EQ(fromSockaddr(nullptr), TransportAddress{});
}

}  // namespace
}  // namespace kturn::net
