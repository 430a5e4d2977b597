// RFC 8656 §21 checks driven through the request handlers, not only through ListenerPolicy
// (restricted_peers_test.cc): a catch-all cluster refuses restricted peers at CreatePermission,
// ChannelBind and per packet; an endpoint inside a restricted range admits exactly that range;
// the server's own listener is never a peer; the per-user quota holds for REST usernames.
// docs/security.md cites these tests.
#include "stun/channel_data.h"
#include "turn/authenticator.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

const std::vector<uint8_t> kPayload = {'p', 'i', 'n', 'g'};

PeerRange range(const char* prefix, uint8_t length, uint16_t min_port = 1,
                uint16_t max_port = 65535) {
  return PeerRange{*IpAddress::parse(prefix), length, min_port, max_port};
}

class PeerPolicyTest : public TurnTest {
 protected:
  // A listener whose routes end in `peers`, listening on 10.2.0.1:3478 (inside the pod range, as
  // a kturnd pod's own address is).
  void start(std::vector<PeerRange> peers) {
    ServerConfig c = staticConfig();
    c.listeners[0].peers = std::move(peers);
    c.listeners[0].own_addresses = {addr("10.2.0.1:3478")};
    reset(c);
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  }

  // A Send indication; true if the core relayed it.
  bool send(const TransportAddress& peer) {
    fromClient(buildRequest(
        stun::Method::kSend,
        [&](stun::MessageBuilder& b) {
          b.addXorAddress(stun::attr::kXorPeerAddress, peer).add(stun::attr::kData, kPayload);
        },
        /*auth=*/false, stun::MessageClass::kIndication));
    return !sentToPeers().empty();
  }

  uint16_t next_channel_ = 0x4000;
};

TEST_F(PeerPolicyTest, CatchAllClusterRefusesRestrictedPeersAtEveryStep) {
  start({range("0.0.0.0", 0), range("::", 0)});
  // The IPv4 restricted ranges (the relay here is IPv4; IPv6 peers would be 443 before any
  // policy check, and restricted_peers_test.cc covers the IPv6 ranges of the same function).
  for (const char* ip : {"127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3", "169.254.169.254",
                         "169.254.0.1", "100.100.100.200", "224.0.0.251", "239.255.255.250",
                         "255.255.255.255", "240.0.0.1", "192.88.99.1"}) {
    const TransportAddress peer{*IpAddress::parse(ip), 5000};
    EXPECT_EQ(createPermission({peer}).errorCode(), 403) << ip;
    EXPECT_EQ(channelBind(next_channel_++, peer).errorCode(), 403) << ip;
    EXPECT_FALSE(send(peer)) << ip;  // no permission was installed
    EXPECT_FALSE(fromPeer(peer, kPayload)) << ip;
  }
  // A refused peer among allowed ones installs nothing (all or none, RFC 8656 §9.2).
  EXPECT_EQ(createPermission({addr("10.9.9.9:1"), addr("127.0.0.1:1")}).errorCode(), 403);
  EXPECT_FALSE(send(addr("10.9.9.9:5000")));
  // Private and public ranges are ordinary peers under the catch-all: pods live there.
  for (const char* ip : {"10.9.9.9", "172.16.0.1", "192.168.1.1", "100.64.0.1", "203.0.113.9"}) {
    const TransportAddress peer{*IpAddress::parse(ip), 5000};
    EXPECT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse) << ip;
    EXPECT_TRUE(send(peer)) << ip;
    EXPECT_TRUE(fromPeer(peer, kPayload)) << ip;
  }
  EXPECT_GE(server_->stats().permission_denied, 25u);
}

TEST_F(PeerPolicyTest, AnEndpointInsideARestrictedRangeAdmitsExactlyThatRange) {
  start({range("0.0.0.0", 0), range("127.0.0.1", 32), range("169.254.169.254", 32, 80, 80)});
  const auto loopback = addr("127.0.0.1:40000");
  ASSERT_EQ(channelBind(0x4001, loopback).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(send(loopback));
  EXPECT_TRUE(fromPeer(loopback, kPayload));
  EXPECT_EQ(createPermission({addr("127.0.0.2:40000")}).errorCode(), 403);  // not in the /32
  // The metadata endpoint on port 80 only, checked per packet: the permission is per IP.
  ASSERT_EQ(createPermission({addr("169.254.169.254:80")}).cls(),
            stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(send(addr("169.254.169.254:80")));
  EXPECT_FALSE(send(addr("169.254.169.254:8080")));
  EXPECT_FALSE(fromPeer(addr("169.254.169.254:8080"), kPayload));
  EXPECT_EQ(channelBind(0x4002, addr("169.254.169.254:8080")).errorCode(), 403);
}

TEST_F(PeerPolicyTest, TheServersOwnListenerIsNeverAPeer) {
  // The pod network is routed, and the server listens inside it: relaying to its own listener
  // would be a TURN-in-TURN loop.
  start({range("10.2.0.0", 16)});
  const auto own = addr("10.2.0.1:3478");
  EXPECT_EQ(channelBind(0x4001, own).errorCode(), 403);
  // A permission is per IP, and other ports of the server's address are ordinary peers...
  ASSERT_EQ(createPermission({own}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(send(addr("10.2.0.1:5000")));
  // ...but datagrams to or from the listener's port are dropped, packet by packet.
  EXPECT_FALSE(send(own));
  EXPECT_FALSE(fromPeer(own, kPayload));
  EXPECT_GE(server_->stats().drop_peer_denied, 2u);
}

class EphemeralQuotaTest : public TurnTest {
 protected:
  EphemeralQuotaTest() {
    ServerConfig c = staticConfig();
    c.auth_mode = AuthMode::kEphemeral;
    c.max_allocations_per_user = 2;
    reset(c);
    username_ = std::to_string(now_.unix_seconds + 3600) + ":alice";
    password_ = restPassword("s3cret", username_);
  }
};

TEST_F(EphemeralQuotaTest, OneRestCredentialHoldsAtMostQuotaAllocations) {
  for (uint16_t port = 1000; port < 1002; ++port) {
    tuple_.client.port = port;
    nonce_.clear();
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  }
  tuple_.client.port = 1002;
  nonce_.clear();
  EXPECT_EQ(allocate().errorCode(), 486);
  // Each REST username is its own user (as in coturn): another credential is not affected.
  username_ = std::to_string(now_.unix_seconds + 3601) + ":alice";
  password_ = restPassword("s3cret", username_);
  nonce_.clear();
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

}  // namespace
}  // namespace kturn::turn::testing
