// A listener on "::" serves IPv4 and IPv6 clients on one port (an IPv6-only socket and an IPv4
// one), each seeing its own address family; a relay of the other family comes from the same
// interface (REQUESTED-ADDRESS-FAMILY).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/sockaddr.h"
#include "stun/attributes.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using testing::TurnTestClient;

class DaemonDualStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testing::freeUdpPort();
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-dual-stack-test-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_)
        << "version: v1\n"
           "admin: {name: t, healthcheck_endpoint: \"\"}\n"
           "auth: {type: static, realm: r, credentials: {username: u, password: p}}\n"
           "listeners:\n"
           "  - {name: any, protocol: TURN-UDP, address: \"::\", port: "
        << port_
        << ", routes: [c]}\n"
           "  - {name: any-tcp, protocol: TURN-TCP, address: \"::\", port: "
        << port_
        << ", routes: [c]}\n"
           "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32, \"::1/128\"]}]\n";
    daemon_ = testing::startDaemonOn(path_);
    ASSERT_TRUE(daemon_);
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  TurnTestClient client(const char* ip) {
    return TurnTestClient(TransportAddress{*IpAddress::parse(ip), port_}, "u", "p");
  }

  uint16_t port_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonDualStackTest, IPv4AndIPv6ClientsShareThePortEachInItsFamily) {
  auto v4 = client("127.0.0.1");
  const auto b4 = v4.binding();
  ASSERT_TRUE(b4.success);
  ASSERT_TRUE(b4.mapped);
  EXPECT_EQ(*b4.mapped, v4.local()) << "an IPv4 client is seen as IPv4, not ::ffff:127.0.0.1";

  auto v6 = client("::1");
  const auto b6 = v6.binding();
  ASSERT_TRUE(b6.success);
  ASSERT_TRUE(b6.mapped);
  EXPECT_EQ(*b6.mapped, v6.local());

  // The default relay family is IPv4 (RFC 8656 §7.2), also for the IPv6 client: from the
  // interface of the address it reached (::1 → 127.0.0.1).
  const auto a4 = v4.allocate();
  ASSERT_TRUE(a4.success) << a4.error;
  EXPECT_EQ(a4.relayed->ip, *IpAddress::parse("127.0.0.1"));
  const auto a6 = v6.allocate();
  ASSERT_TRUE(a6.success) << a6.error;
  EXPECT_EQ(a6.relayed->ip, *IpAddress::parse("127.0.0.1"));
}

TEST_F(DaemonDualStackTest, AnIPv4ClientOfADualStackTcpListenerIsSeenAsIPv4) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss;
  const socklen_t len =
      net::toSockaddr(TransportAddress{*IpAddress::parse("127.0.0.1"), port_}, ss);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
  const TransportAddress local = *net::localAddress(fd);
  uint8_t buf[64];
  stun::TransactionId txid{};
  txid[0] = 7;
  const auto request =
      *stun::MessageBuilder(buf, stun::Method::kBinding, stun::MessageClass::kRequest, txid)
           .finish();
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  uint8_t in[256];
  size_t got = 0;
  pollfd p{fd, POLLIN, 0};
  while (got < 20 && ::poll(&p, 1, 2000) > 0) {
    const ssize_t n = ::recv(fd, in + got, sizeof in - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  auto response = stun::MessageView::parse({in, got});
  ASSERT_TRUE(response);
  const auto mapped = response->value(stun::attr::kXorMappedAddress);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(stun::decodeXorAddress(*mapped, response->xorPad()), local) << "not ::ffff:127.0.0.1";
}

}  // namespace
}  // namespace kturn::daemon
