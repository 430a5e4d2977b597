#include "net/udp_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <vector>

#include "net/loopback.h"

namespace kturn::net {
namespace {

using testing::bindLoopback;
using testing::loopback;

class UdpSocketFamilyTest : public ::testing::TestWithParam<AddressFamily> {};

TEST_P(UdpSocketFamilyTest, BindPortZeroGivesRealPort) {
  auto socket = UdpSocket::bind({loopback(GetParam()), 0}, {});
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_GE(socket->fd(), 0);
  EXPECT_EQ(socket->localAddress().ip, loopback(GetParam()));
  EXPECT_NE(socket->localAddress().port, 0);
}

TEST_P(UdpSocketFamilyTest, NonBlockingAndCloseOnExec) {
  UdpSocket socket = bindLoopback(GetParam());
  EXPECT_TRUE(::fcntl(socket.fd(), F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(socket.fd(), F_GETFD) & FD_CLOEXEC);
}

TEST_P(UdpSocketFamilyTest, ReusePortLetsTwoSocketsShareAPort) {
  const UdpSocketOptions opts{.reuse_port = true};
  auto first = UdpSocket::bind({loopback(GetParam()), 0}, opts);
  ASSERT_TRUE(first) << first.error().message;
  auto second = UdpSocket::bind(first->localAddress(), opts);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->localAddress(), first->localAddress());
}

TEST_P(UdpSocketFamilyTest, SamePortWithoutReusePortFails) {
  UdpSocket first = bindLoopback(GetParam());
  auto second = UdpSocket::bind(first.localAddress(), {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Error::Code::kIo);
  EXPECT_NE(second.error().message.find(first.localAddress().toString()), std::string::npos);
}

// Finds `size` consecutive free ports above the kernel's ephemeral range, so that nothing else
// on the machine is likely to take them while the test runs.
std::optional<uint16_t> findFreeRange(AddressFamily family, uint16_t size) {
  const uint16_t base = 61000 + static_cast<uint16_t>((::getpid() * 37) % 4000);
  for (int attempt = 0; attempt < 50; ++attempt) {
    const auto start = static_cast<uint16_t>(base + attempt * size);
    std::vector<UdpSocket> probes;
    for (uint16_t p = start; p < start + size; ++p) {
      auto s = UdpSocket::bind({loopback(family), p}, {});
      if (!s) break;
      probes.push_back(std::move(*s));
    }
    if (probes.size() == size) return start;  // the probes close here, freeing the range
  }
  return std::nullopt;
}

TEST_P(UdpSocketFamilyTest, BindInRangeFillsTheRangeThenReportsExhaustion) {
  constexpr uint16_t kSize = 4;
  const auto min = findFreeRange(GetParam(), kSize);
  ASSERT_TRUE(min);
  const auto max = static_cast<uint16_t>(*min + kSize - 1);
  std::vector<UdpSocket> sockets;
  std::set<uint16_t> ports;
  for (uint32_t i = 0; i < kSize; ++i) {
    auto s = UdpSocket::bindInRange(loopback(GetParam()), *min, max, {}, /*start_hint=*/0);
    ASSERT_TRUE(s) << s.error().message;
    const uint16_t port = s->localAddress().port;
    EXPECT_GE(port, *min);
    EXPECT_LE(port, max);
    ports.insert(port);
    sockets.push_back(std::move(*s));
  }
  EXPECT_EQ(ports.size(), kSize);
  auto full = UdpSocket::bindInRange(loopback(GetParam()), *min, max, {}, 0);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, Error::Code::kExhausted);

  // A freed port is found again, wherever the hint starts.
  const uint16_t freed = sockets[1].localAddress().port;
  sockets.erase(sockets.begin() + 1);
  auto again = UdpSocket::bindInRange(loopback(GetParam()), *min, max, {}, 3);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->localAddress().port, freed);
}

TEST_P(UdpSocketFamilyTest, BindInRangeStartsAtTheHintAndWraps) {
  constexpr uint16_t kSize = 4;
  const auto min = findFreeRange(GetParam(), kSize);
  ASSERT_TRUE(min);
  const auto max = static_cast<uint16_t>(*min + kSize - 1);
  const IpAddress ip = loopback(GetParam());

  auto at_two = UdpSocket::bindInRange(ip, *min, max, {}, 2);
  ASSERT_TRUE(at_two) << at_two.error().message;
  EXPECT_EQ(at_two->localAddress().port, *min + 2);
  // Hint 6 is 2 modulo the range size; that port is taken, so the next one is used.
  auto next = UdpSocket::bindInRange(ip, *min, max, {}, 6);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->localAddress().port, *min + 3);
  // From the top of the range the search wraps to the bottom.
  auto wrapped = UdpSocket::bindInRange(ip, *min, max, {}, 3);
  ASSERT_TRUE(wrapped) << wrapped.error().message;
  EXPECT_EQ(wrapped->localAddress().port, *min);
}

INSTANTIATE_TEST_SUITE_P(Loopback, UdpSocketFamilyTest,
                         ::testing::Values(AddressFamily::kIPv4, AddressFamily::kIPv6),
                         [](const auto& info) {
                           return info.param == AddressFamily::kIPv4 ? "IPv4" : "IPv6";
                         });

TEST(UdpSocketTest, BindInRangeRejectsBadRanges) {
  const IpAddress ip = loopback(AddressFamily::kIPv4);
  auto empty = UdpSocket::bindInRange(ip, 5000, 4999, {}, 0);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, Error::Code::kInvalidArgument);
  auto zero = UdpSocket::bindInRange(ip, 0, 10, {}, 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, Error::Code::kInvalidArgument);
}

TEST(UdpSocketTest, BindToAnAddressNotOnTheHostFails) {
  // 192.0.2.0/24 is TEST-NET-1: never a local address, so bind fails with EADDRNOTAVAIL.
  auto s = UdpSocket::bind(*TransportAddress::parse("192.0.2.1:0"), {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, Error::Code::kIo);
}

int intOption(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof value;
  EXPECT_EQ(::getsockopt(fd, level, name, &value, &len), 0);
  return value;
}

TEST(UdpSocketTest, AppliesBufferSizesAndV6Only) {
  constexpr int kBytes = 256 * 1024;
  UdpSocket v6 = bindLoopback(AddressFamily::kIPv6,
                              {.recv_buffer = kBytes, .send_buffer = kBytes, .ipv6_only = true});
  // The kernel doubles the request to account for its bookkeeping.
  EXPECT_GE(intOption(v6.fd(), SOL_SOCKET, SO_RCVBUF), kBytes);
  EXPECT_GE(intOption(v6.fd(), SOL_SOCKET, SO_SNDBUF), kBytes);
  EXPECT_EQ(intOption(v6.fd(), IPPROTO_IPV6, IPV6_V6ONLY), 1);

  auto dual = UdpSocket::bind(*TransportAddress::parse("[::]:0"), {.ipv6_only = false});
  ASSERT_TRUE(dual) << dual.error().message;
  EXPECT_EQ(intOption(dual->fd(), IPPROTO_IPV6, IPV6_V6ONLY), 0);
}

TEST(UdpSocketTest, MovedSocketKeepsTheDescriptor) {
  UdpSocket a = bindLoopback(AddressFamily::kIPv4);
  const int fd = a.fd();
  const TransportAddress local = a.localAddress();
  UdpSocket b = std::move(a);
  EXPECT_EQ(b.fd(), fd);
  EXPECT_EQ(b.localAddress(), local);
  EXPECT_EQ(a.fd(), -1);  // NOLINT(bugprone-use-after-move): moved-from state is specified
}

}  // namespace
}  // namespace kturn::net
