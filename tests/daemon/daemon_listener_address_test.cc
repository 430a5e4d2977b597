// A listener's `address` is its relay address, as in stunnerd: the listener binds every address
// (IPv4 and IPv6 clients on one port), and an address that is not the host's (a 1:1 NAT's public
// one) is named in XOR-RELAYED-ADDRESS while the relay socket binds the address the client
// reached. `bind_address` binds one address.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using testing::TurnTestClient;
using testing::UdpPeer;

// TEST-NET-2 (RFC 5737): never an address of this host.
constexpr const char* kPublicIp = "198.51.100.7";

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class DaemonListenerAddressTest : public ::testing::Test {
 protected:
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  // One TURN-UDP listener with `fields` ("address: ..., bind_address: ...") on a free port.
  void start(const std::string& fields) {
    port_ = testing::freeUdpPort();
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-listener-address-test-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << "version: v1\n"
                            "admin: {name: t, healthcheck_endpoint: \"\"}\n"
                            "auth: {type: static, realm: r, credentials: {username: u, "
                            "password: p}}\n"
                            "listeners:\n"
                            "  - {name: udp, protocol: TURN-UDP, port: "
                         << port_ << ", " << fields
                         << ", routes: [c]}\n"
                            "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
    daemon_ = testing::startDaemonOn(path_);
  }

  TurnTestClient client(const char* ip) const {
    return TurnTestClient(TransportAddress{*IpAddress::parse(ip), port_}, "u", "p");
  }

  // Allocates through `c`, checks that XOR-RELAYED-ADDRESS names `relay_ip`, and relays a
  // datagram each way with a loopback peer, which sees the relay socket on loopback.
  void relaysThrough(TurnTestClient& c, const char* relay_ip) {
    const auto allocated = c.allocate();
    ASSERT_TRUE(allocated.success) << allocated.error;
    ASSERT_TRUE(allocated.relayed);
    EXPECT_EQ(allocated.relayed->ip, *IpAddress::parse(relay_ip));
    UdpPeer peer("127.0.0.1");
    ASSERT_TRUE(c.createPermission(peer.address()).success);
    c.sendIndication(peer.address(), bytes("out"));
    const auto got = peer.receive(std::chrono::seconds(2));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->second, "out");
    EXPECT_EQ(got->first.port, allocated.relayed->port) << "the relay socket has the named port";
    peer.sendTo(got->first, "back");
    const auto data = c.receiveData(std::chrono::seconds(2));
    ASSERT_TRUE(data);
    EXPECT_EQ(std::string(data->second.begin(), data->second.end()), "back");
  }

  uint16_t port_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonListenerAddressTest, AnAddressOfNoInterfaceIsTheRelayAddressNotABindFailure) {
  start(std::string("address: ") + kPublicIp);  // bound before: "Cannot assign requested address"
  ASSERT_TRUE(daemon_);
  auto v4 = client("127.0.0.1");
  relaysThrough(v4, kPublicIp);
}

TEST_F(DaemonListenerAddressTest, TheListenerServesEveryAddressAndBothFamilies) {
  start(std::string("address: ") + kPublicIp);
  ASSERT_TRUE(daemon_);
  // 127.0.0.2 is no listener address in the config; an IPv6 client of an IPv4 relay address
  // gets the default IPv4 relay (RFC 8656 §7.2).
  auto other = client("127.0.0.2");
  EXPECT_TRUE(other.binding().success);
  auto v6 = client("::1");
  relaysThrough(v6, kPublicIp);
}

TEST_F(DaemonListenerAddressTest, BindAddressBindsOnlyThatAddress) {
  start(std::string("address: ") + kPublicIp + ", bind_address: 127.0.0.1");
  ASSERT_TRUE(daemon_);
  auto bound = client("127.0.0.1");
  relaysThrough(bound, kPublicIp);
  auto other = client("127.0.0.2");
  EXPECT_FALSE(other.binding().answered);
}

TEST_F(DaemonListenerAddressTest, ALoopbackAddressBindsOnlyItself) {
  start("address: 127.0.0.1");
  ASSERT_TRUE(daemon_);
  auto c = client("127.0.0.1");
  relaysThrough(c, "127.0.0.1");
  auto other = client("127.0.0.2");
  EXPECT_FALSE(other.binding().answered) << "a loopback config stays on its address";
}

}  // namespace
}  // namespace kturn::daemon
