// The relay port lookup (bpf/kturn_relay_lookup.bpf.c) attached by the kernel to a network
// namespace of the test's own: datagrams to every relayed address it holds arrive on one socket,
// which reads each one's original destination; everything else is looked up as usual.
#include "xdp/relay_lookup.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "net/sockaddr.h"
#include "test_netns.h"

namespace kturn::xdp {
namespace {

using testing::TestNetns;

struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  Socket(const Socket&) = delete;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

sockaddr_storage sockaddrOf(const TransportAddress& a, socklen_t& len) {
  sockaddr_storage ss{};
  len = net::toSockaddr(a, ss);
  return ss;
}

// A UDP socket bound to `at` (port 0: any), with the original destination of each datagram
// reported (the shared relay socket's option).
int udpSocket(const TransportAddress& at, bool orig_dst) {
  const int family = at.ip.isV4() ? AF_INET : AF_INET6;
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (!at.ip.isV4()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (orig_dst) {
    if (at.ip.isV4()) {
      ::setsockopt(fd, IPPROTO_IP, IP_RECVORIGDSTADDR, &one, sizeof(one));
    } else {
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, &one, sizeof(one));
    }
  }
  socklen_t len = 0;
  sockaddr_storage ss = sockaddrOf(at, len);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&ss), len), 0) << std::strerror(errno);
  timeval tv{.tv_sec = 0, .tv_usec = 300'000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void sendTo(int fd, const TransportAddress& to, const std::string& text) {
  socklen_t len = 0;
  sockaddr_storage ss = sockaddrOf(to, len);
  ASSERT_EQ(::sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&ss), len),
            static_cast<ssize_t>(text.size()))
      << std::strerror(errno);
}

struct Received {
  std::string text;
  uint16_t original_port = 0;  // from IP(V6)_ORIGDSTADDR
};

std::optional<Received> receive(int fd) {
  char data[256];
  alignas(cmsghdr) char control[128];
  iovec iov{data, sizeof(data)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd, &msg, 0);
  if (n < 0) return std::nullopt;
  Received r{std::string(data, static_cast<size_t>(n))};
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_ORIGDSTADDR) {
      sockaddr_in sin;
      std::memcpy(&sin, CMSG_DATA(c), sizeof(sin));
      r.original_port = ntohs(sin.sin_port);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR) {
      sockaddr_in6 sin6;
      std::memcpy(&sin6, CMSG_DATA(c), sizeof(sin6));
      r.original_port = ntohs(sin6.sin6_port);
    }
  }
  return r;
}

TransportAddress at(const char* ip, uint16_t port) { return {*IpAddress::parse(ip), port}; }

class RelayLookupTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { error_ = TestNetns::setUp(); }
  void SetUp() override {
    if (!error_.empty()) GTEST_SKIP() << "eBPF tests need root and BPF: " << error_;
    auto attached = RelayLookup::attach(64);
    ASSERT_TRUE(attached) << attached.error().message;
    lookup_ = std::move(*attached);
  }
  const char* host() const { return GetParam(); }

  static std::string error_;
  std::unique_ptr<RelayLookup> lookup_;
};
std::string RelayLookupTest::error_;

TEST_P(RelayLookupTest, DatagramsToEveryRelayedAddressArriveOnOneSocket) {
  Socket shared(udpSocket(at(host(), 0), true));
  Socket peer(udpSocket(at(host(), 0), false));
  ASSERT_TRUE(lookup_->setSocket(3, shared.fd));
  for (uint16_t port = 41000; port < 41010; ++port) ASSERT_TRUE(lookup_->add(at(host(), port), 3));
  for (uint16_t port = 41000; port < 41010; ++port) {
    sendTo(peer.fd, at(host(), port), "to " + std::to_string(port));
  }
  for (uint16_t port = 41000; port < 41010; ++port) {
    auto r = receive(shared.fd);
    ASSERT_TRUE(r) << "nothing arrived for port " << port;
    EXPECT_EQ(r->text, "to " + std::to_string(port));
    EXPECT_EQ(r->original_port, port);
  }
}

TEST_P(RelayLookupTest, AddressesNotHeldAreLookedUpAsUsual) {
  Socket shared(udpSocket(at(host(), 0), true));
  Socket own(udpSocket(at(host(), 41100), false));  // some other program's socket
  Socket peer(udpSocket(at(host(), 0), false));
  ASSERT_TRUE(lookup_->setSocket(0, shared.fd));
  ASSERT_TRUE(lookup_->add(at(host(), 41101), 0));
  sendTo(peer.fd, at(host(), 41100), "not a relay");
  auto r = receive(own.fd);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "not a relay");
  EXPECT_FALSE(receive(shared.fd)) << "the shared socket took a datagram it does not hold";
}

TEST_P(RelayLookupTest, ARemovedAddressNoLongerArrives) {
  Socket shared(udpSocket(at(host(), 0), true));
  Socket peer(udpSocket(at(host(), 0), false));
  ASSERT_TRUE(lookup_->setSocket(1, shared.fd));
  ASSERT_TRUE(lookup_->add(at(host(), 41200), 1));
  sendTo(peer.fd, at(host(), 41200), "held");
  ASSERT_TRUE(receive(shared.fd));
  lookup_->remove(at(host(), 41200));
  sendTo(peer.fd, at(host(), 41200), "released");
  EXPECT_FALSE(receive(shared.fd));
}

TEST_P(RelayLookupTest, DetachingOnDestructionLeavesNothingBehind) {
  Socket shared(udpSocket(at(host(), 0), true));
  Socket peer(udpSocket(at(host(), 0), false));
  ASSERT_TRUE(lookup_->setSocket(2, shared.fd));
  ASSERT_TRUE(lookup_->add(at(host(), 41300), 2));
  lookup_.reset();
  sendTo(peer.fd, at(host(), 41300), "after");
  EXPECT_FALSE(receive(shared.fd));
}

TEST_P(RelayLookupTest, AStreamToAHeldPortNumberIsNotDiverted) {
  Socket shared(udpSocket(at(host(), 0), true));
  ASSERT_TRUE(lookup_->setSocket(0, shared.fd));
  ASSERT_TRUE(lookup_->add(at(host(), 41400), 0));
  const int family = IpAddress::parse(host())->isV4() ? AF_INET : AF_INET6;
  Socket listener(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t len = 0;
  sockaddr_storage ss = sockaddrOf(at(host(), 41400), len);
  ASSERT_EQ(::bind(listener.fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
  ASSERT_EQ(::listen(listener.fd, 1), 0);
  Socket client(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(client.fd, reinterpret_cast<sockaddr*>(&ss), len), 0) << std::strerror(errno);
}

INSTANTIATE_TEST_SUITE_P(Families, RelayLookupTest, ::testing::Values("127.0.0.1", "::1"),
                         [](const auto& info) {
                           return std::string(info.param[0] == ':' ? "IPv6" : "IPv4");
                         });

}  // namespace
}  // namespace kturn::xdp
