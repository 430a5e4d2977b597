// A listener on "::" serves IPv4 and IPv6 clients on one port (an IPv6-only socket and an IPv4
// one), each seeing its own address family; a relay of the other family comes from the same
// interface (REQUESTED-ADDRESS-FAMILY), and a dual allocation (ADDITIONAL-ADDRESS-FAMILY) gets
// one of each.
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
using Peer = testing::UdpPeer;

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class DaemonDualStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testing::freeTcpPort();  // UDP and TCP listeners share it
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

TEST_F(DaemonDualStackTest, DualAllocationRelaysToPeersOfBothFamilies) {
  auto c = client("127.0.0.1");
  const auto allocated = c.allocateDual();
  ASSERT_TRUE(allocated.success) << allocated.error;
  ASSERT_EQ(allocated.relayed_all.size(), 2u);
  const TransportAddress relay4 = allocated.relayed_all[0];
  const TransportAddress relay6 = allocated.relayed_all[1];
  EXPECT_EQ(relay4.ip, *IpAddress::parse("127.0.0.1"));
  EXPECT_EQ(relay6.ip, *IpAddress::parse("::1"));
  EXPECT_EQ(allocated.address_error, 0);

  Peer peer4("127.0.0.1");
  Peer peer6("::1");
  ASSERT_TRUE(c.createPermission(peer4.address()).success);
  ASSERT_TRUE(c.createPermission(peer6.address()).success);

  // Each peer hears the client from the relay of its own family.
  c.sendIndication(peer4.address(), bytes("to-v4"));
  c.sendIndication(peer6.address(), bytes("to-v6"));
  const auto at4 = peer4.receive(std::chrono::seconds(2));
  ASSERT_TRUE(at4);
  EXPECT_EQ(at4->first, relay4);
  EXPECT_EQ(at4->second, "to-v4");
  const auto at6 = peer6.receive(std::chrono::seconds(2));
  ASSERT_TRUE(at6);
  EXPECT_EQ(at6->first, relay6);
  EXPECT_EQ(at6->second, "to-v6");

  // And the client hears each peer through it.
  peer6.sendTo(relay6, "from-v6");
  auto data = c.receiveData(std::chrono::seconds(2));
  ASSERT_TRUE(data);
  EXPECT_EQ(data->first, peer6.address());
  EXPECT_EQ(std::string(data->second.begin(), data->second.end()), "from-v6");
  peer4.sendTo(relay4, "from-v4");
  data = c.receiveData(std::chrono::seconds(2));
  ASSERT_TRUE(data);
  EXPECT_EQ(data->first, peer4.address());

  // Releasing the IPv6 half closes its relay; the IPv4 half relays on.
  const auto released = c.refreshFamily(0, AddressFamily::kIPv6);
  ASSERT_TRUE(released.success) << released.error;
  peer6.sendTo(relay6, "lost");
  EXPECT_FALSE(c.receiveData(std::chrono::milliseconds(300)));
  EXPECT_EQ(c.createPermission(peer6.address()).error, 443);
  peer4.sendTo(relay4, "still");
  data = c.receiveData(std::chrono::seconds(2));
  ASSERT_TRUE(data);
  EXPECT_EQ(std::string(data->second.begin(), data->second.end()), "still");
  EXPECT_TRUE(c.refresh(0).success);
}

}  // namespace
}  // namespace kturn::daemon
