// The parts turn::Server is made of, each on its own: PeerPolicy, BandwidthCaps, PeerConnections
// and RequestAuth. The server-level tests (relay_test.cc, auth_test.cc, tcp_allocation_test.cc
// ...) drive them through real requests; these pin down each part's own contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "support/fake_relays.h"
#include "support/turn_request.h"
#include "turn/bandwidth_caps.h"
#include "turn/peer_connections.h"
#include "turn/peer_policy.h"
#include "turn/request_auth.h"

namespace kturn::turn {
namespace {

constexpr ListenerId kListener = 3;

TransportAddress addr(const char* text) { return *TransportAddress::parse(text); }
IpAddress ip(const char* text) { return *IpAddress::parse(text); }

ServerConfig configWith(std::vector<PeerRange> peers) {
  ServerConfig c;
  c.auth_mode = AuthMode::kStatic;
  c.realm = "kturn.test";
  c.static_username = "user1";
  c.static_password = "pass1";
  ListenerPolicy l;
  l.id = kListener;
  l.name = "default/gw/udp";
  l.peers = std::move(peers);
  c.listeners.push_back(l);
  return c;
}

// --- PeerPolicy ----------------------------------------------------------------------------

TEST(PeerPolicyVerdictTest, AVerdictHoldsUntilTheNextConfig) {
  const ServerConfig open = configWith({PeerRange{ip("10.2.0.0"), 16, 0, 65535, 7}});
  const ServerConfig closed = configWith({});
  PeerPolicy policy(open);
  PolicyVerdict verdict;
  EXPECT_TRUE(policy.admits(kListener, verdict, addr("10.2.0.9:5000")));
  EXPECT_EQ(verdict.cluster, 7u);

  // Same epoch: the cached verdict answers, whatever the peer (the caller keeps one per peer).
  const uint64_t epoch = verdict.epoch;
  EXPECT_TRUE(policy.admits(kListener, verdict, addr("10.2.0.9:5000")));
  EXPECT_EQ(verdict.epoch, epoch);

  // A new config makes it stale: checked again, now refused.
  policy.apply(closed);
  EXPECT_FALSE(policy.admits(kListener, verdict, addr("10.2.0.9:5000")));
  EXPECT_GT(verdict.epoch, epoch);
}

TEST(PeerPolicyVerdictTest, AnUnknownListenerAdmitsNobody) {
  const ServerConfig c = configWith({PeerRange{ip("10.2.0.0"), 16, 0, 65535, 1}});
  PeerPolicy policy(c);
  PolicyVerdict verdict;
  EXPECT_FALSE(policy.admits(kListener + 1, verdict, addr("10.2.0.9:5000")));
  EXPECT_FALSE(policy.admitsIp(kListener + 1, verdict, ip("10.2.0.9")));
  EXPECT_EQ(policy.admittingTcp(kListener + 1, addr("10.2.0.9:5000")), nullptr);
}

TEST(PeerPolicyVerdictTest, APacketToAPortRestrictedEndpointIsCheckedByPort) {
  const ServerConfig c = configWith({PeerRange{ip("10.3.0.5"), 32, 10000, 20000, 4}});
  PeerPolicy policy(c);
  Permission permission{ip("10.3.0.5"), {}, {}, {}};
  ClusterId cluster = 0;
  EXPECT_TRUE(policy.admitsPacket(kListener, permission, addr("10.3.0.5:15000"), cluster));
  EXPECT_EQ(cluster, 4u);
  // The cached any-port verdict says no, so each packet's port decides.
  EXPECT_FALSE(permission.any_port_verdict.allowed);
  EXPECT_FALSE(policy.admitsPacket(kListener, permission, addr("10.3.0.5:9999"), cluster));
  EXPECT_TRUE(policy.admitsIp(kListener, permission.ip_verdict, ip("10.3.0.5")));
}

TEST(PeerPolicyVerdictTest, TcpAllocationsReachTcpEndpointsOnly) {
  PeerRange udp{ip("10.2.0.0"), 16, 0, 65535, 1};
  PeerRange tcp{ip("10.4.0.0"), 16, 0, 65535, 2};
  tcp.protocol = TransportProtocol::kTcp;
  const ServerConfig c = configWith({udp, tcp});
  PeerPolicy policy(c);
  EXPECT_EQ(policy.admittingTcp(kListener, addr("10.2.0.9:80")), nullptr);
  const PeerRange* range = policy.admittingTcp(kListener, addr("10.4.0.9:80"));
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->cluster, 2u);
}

TEST(PeerPolicyVerdictTest, ForgettingVerdictsClearsEveryCache) {
  Allocation a;
  a.permissions.push_back(Permission{ip("10.2.0.9"), {}, {5, true, 1}, {5, true, 1}});
  a.channels.push_back(ChannelBinding{0x4000, addr("10.2.0.9:5000"), {}, {5, true, 1}});
  PeerPolicy::forgetVerdicts(a);
  EXPECT_EQ(a.permissions[0].ip_verdict.epoch, 0u);
  EXPECT_EQ(a.permissions[0].any_port_verdict.epoch, 0u);
  EXPECT_EQ(a.channels[0].verdict.epoch, 0u);
}

// --- BandwidthCaps --------------------------------------------------------------------------

TEST(BandwidthCapsTest, WithoutCapsEverythingPasses) {
  BandwidthCaps caps(configWith({}));
  Allocation a;
  EXPECT_FALSE(caps.enabled());
  EXPECT_EQ(caps.available(a, BandwidthCaps::Direction::kToPeers, MonoTime{}), UINT64_MAX);
}

TEST(BandwidthCapsTest, TheAllocationCapDropsPastItsBurstAndRefills) {
  ServerConfig c = configWith({});
  c.allocation_bytes_per_second = 100'000;  // burst: 50 kB (500 ms)
  BandwidthCaps caps(c);
  Allocation a;
  a.listener = kListener;
  const MonoTime t0{std::chrono::seconds(100)};
  const uint64_t burst = TokenBucket::burstFor(c.allocation_bytes_per_second);
  EXPECT_TRUE(caps.take(a, BandwidthCaps::Direction::kToPeers, burst, t0));
  EXPECT_FALSE(caps.take(a, BandwidthCaps::Direction::kToPeers, 1, t0));
  // The other direction has a bucket of its own.
  EXPECT_TRUE(caps.take(a, BandwidthCaps::Direction::kToClient, 1000, t0));
  // 10 ms later, 1 kB more.
  EXPECT_TRUE(
      caps.take(a, BandwidthCaps::Direction::kToPeers, 1000, t0 + std::chrono::milliseconds(10)));
}

TEST(BandwidthCapsTest, TheListenerCapIsSharedByItsAllocations) {
  ServerConfig c = configWith({});
  c.listener_bytes_per_second = 100'000;
  BandwidthCaps caps(c);
  Allocation first, second, elsewhere;
  first.listener = second.listener = kListener;
  elsewhere.listener = kListener + 1;
  const MonoTime t0{std::chrono::seconds(100)};
  const uint64_t burst = TokenBucket::burstFor(c.listener_bytes_per_second);
  EXPECT_TRUE(caps.take(first, BandwidthCaps::Direction::kToPeers, burst, t0));
  EXPECT_FALSE(caps.take(second, BandwidthCaps::Direction::kToPeers, 1, t0));
  EXPECT_TRUE(caps.take(elsewhere, BandwidthCaps::Direction::kToPeers, 1, t0));
}

TEST(BandwidthCapsTest, AStreamReadsTheLeastOfBothCapsAndSpendsIt) {
  ServerConfig c = configWith({});
  c.allocation_bytes_per_second = 100'000;
  c.listener_bytes_per_second = 1'000'000;
  BandwidthCaps caps(c);
  Allocation a;
  a.listener = kListener;
  const MonoTime t0{std::chrono::seconds(100)};
  const auto to_client = BandwidthCaps::Direction::kToClient;
  const uint64_t allocation_burst = TokenBucket::burstFor(c.allocation_bytes_per_second);
  EXPECT_EQ(caps.available(a, to_client, t0), allocation_burst);
  caps.spend(a, to_client, allocation_burst);
  EXPECT_EQ(caps.available(a, to_client, t0), 0u);
  // A new config's rates apply to the buckets as they are.
  c.allocation_bytes_per_second = 0;
  caps.apply(c);
  EXPECT_EQ(caps.available(a, to_client, t0),
            TokenBucket::burstFor(c.listener_bytes_per_second) - allocation_burst);
}

// --- PeerConnections ------------------------------------------------------------------------

PeerConnection connectionTo(ConnectionId id, const char* peer) {
  PeerConnection c;
  c.id = id;
  c.peer = addr(peer);
  return c;
}

FiveTuple clientTuple(uint16_t port) {
  return {TransportProtocol::kTcp, TransportAddress{ip("192.0.2.1"), port}, addr("10.0.0.1:3478")};
}

TEST(PeerConnectionsTest, IdsCarryTheWorkerAndAreNeverZeroOrReused) {
  PeerConnections connections(5);
  AllocationTable allocations;
  Allocation& a = allocations.create(clientTuple(1000));
  const ConnectionId first = connections.nextId();
  EXPECT_EQ(first >> 24, 5u);
  EXPECT_NE(first & 0xFFFFFF, 0u);
  connections.add(a, connectionTo(first, "10.4.0.9:80"));
  EXPECT_NE(connections.nextId(), first);
}

TEST(PeerConnectionsTest, FindsTheHolderAndForgetsWithIt) {
  PeerConnections connections(0);
  AllocationTable allocations;
  Allocation& a = allocations.create(clientTuple(1000));
  const ConnectionId id = connections.nextId();
  connections.add(a, connectionTo(id, "10.4.0.9:80"));
  PeerConnections::Held held = connections.find(id, allocations);
  EXPECT_EQ(held.allocation, &a);
  ASSERT_NE(held.connection, nullptr);
  EXPECT_EQ(held.connection->peer, addr("10.4.0.9:80"));

  connections.forget(a, id);
  EXPECT_TRUE(a.connections.empty());
  EXPECT_EQ(connections.find(id, allocations).allocation, nullptr);
}

TEST(PeerConnectionsTest, ExpiresOnlyOverdueBindsAndClosesTheirSockets) {
  PeerConnections connections(0);
  ::kturn::testing::FakeRelays relays;
  AllocationTable allocations;
  Allocation& a = allocations.create(clientTuple(1000));
  const MonoTime t0{std::chrono::seconds(100)};
  PeerConnection overdue = connectionTo(connections.nextId(), "10.4.0.9:80");
  overdue.state = PeerConnection::State::kPendingBind;
  overdue.deadline = t0;
  PeerConnection pending = overdue;
  pending.id = connections.nextId();
  pending.peer = addr("10.4.0.9:81");
  pending.deadline = t0 + PeerConnections::kBindTimeout;
  PeerConnection bound = overdue;
  bound.id = connections.nextId();
  bound.peer = addr("10.4.0.9:82");
  bound.state = PeerConnection::State::kBound;
  for (const PeerConnection& c : {overdue, pending, bound}) connections.add(a, c);

  EXPECT_EQ(connections.expire(a, t0, relays), 1u);
  EXPECT_EQ(relays.closed_connections, std::vector<ConnectionId>{overdue.id});
  EXPECT_EQ(connections.find(overdue.id, allocations).allocation, nullptr);
  EXPECT_EQ(a.connections.size(), 2u);

  std::vector<ConnectionId> seen;
  connections.forEachBound(allocations,
                           [&](Allocation&, const PeerConnection& c) { seen.push_back(c.id); });
  EXPECT_EQ(seen, std::vector<ConnectionId>{bound.id});
}

TEST(PeerConnectionsTest, AnAllocationHoldsAtMostItsLimit) {
  Allocation a;
  a.connections.resize(PeerConnections::kMaxPerAllocation - 1);
  EXPECT_FALSE(PeerConnections::full(a));
  a.connections.emplace_back();
  EXPECT_TRUE(PeerConnections::full(a));
}

// --- RequestAuth ----------------------------------------------------------------------------

class RecordingBlocker : public SourceBlocker {
 public:
  bool block(ListenerId, const FiveTuple& five_tuple, MonoTime) override {
    blocked.push_back(five_tuple.client.ip);
    return true;
  }
  std::vector<IpAddress> blocked;
};

class RequestAuthTest : public ::testing::Test {
 protected:
  RequestAuthTest() : auth_(key_) {
    config_ = configWith({});
    config_.auth_failures_per_window = 3;
    config_.block_seconds = 60;
    auth_.setSourceBlocker(&blocker_);
    now_.mono = MonoTime{std::chrono::seconds(1000)};
    now_.unix_seconds = 1'700'000'000;
  }

  // An Allocate with USERNAME, REALM, `nonce` and a MESSAGE-INTEGRITY keyed with `password`.
  std::vector<uint8_t> request(const std::string& password, const std::string& nonce) {
    const auto key = stun::longTermKey("user1", "kturn.test", password);
    return *::kturn::testing::buildRequest(
        {.method = stun::Method::kAllocate,
         .transaction_id = {1, 2, 3},
         .credentials =
             ::kturn::testing::LongTermCredentials{
                 .username = "user1", .realm = "kturn.test", .nonce = nonce, .key = key.span()},
         .fingerprint = false});
  }

  RequestAuth::Decision check(const std::vector<uint8_t>& bytes) {
    const auto m = *stun::MessageView::parse(bytes);
    return auth_.check(config_, {m, kListener, tuple_, now_, nullptr}, stats_);
  }

  std::string freshNonce() {
    const auto n = auth_.nonceFor(config_, tuple_.client, now_.unix_seconds);
    return {n.begin(), n.end()};
  }

  std::array<uint8_t, 32> key_{1, 2, 3};
  RequestAuth auth_;
  RecordingBlocker blocker_;
  ServerConfig config_;
  ServerStats stats_;
  Now now_;
  FiveTuple tuple_ = {TransportProtocol::kUdp, addr("192.0.2.7:5000"), addr("10.0.0.1:3478")};
};

TEST_F(RequestAuthTest, AcceptsTheRightPasswordWithItsKey) {
  const auto d = check(request("pass1", freshNonce()));
  EXPECT_EQ(d.kind, RequestAuth::Decision::Kind::kAccepted);
  const stun::IntegrityKey expected = stun::longTermKey("user1", "kturn.test", "pass1");
  EXPECT_TRUE(std::ranges::equal(d.key.span(), expected.span()));
  EXPECT_FALSE(d.oauth);
}

TEST_F(RequestAuthTest, ChallengesAStaleNonceWith438) {
  const std::string nonce = freshNonce();
  now_.unix_seconds += config_.lifetimes.nonce.count() + 1;
  const auto d = check(request("pass1", nonce));
  EXPECT_EQ(d.kind, RequestAuth::Decision::Kind::kChallenge);
  EXPECT_EQ(d.code, 438);
  EXPECT_EQ(stats_.auth_stale_nonce, 1u);
}

TEST_F(RequestAuthTest, AuthNoneRefusesEveryTurnRequest) {
  config_.auth_mode = AuthMode::kNone;
  const auto d = check(request("pass1", freshNonce()));
  EXPECT_EQ(d.kind, RequestAuth::Decision::Kind::kRefused);
  EXPECT_EQ(d.code, 403);
}

TEST_F(RequestAuthTest, TheFailureThatUsesUpTheAllowanceBlocksTheSourceThenItIsDropped) {
  const std::string nonce = freshNonce();
  for (uint32_t i = 0; i < config_.auth_failures_per_window; ++i) {
    const auto d = check(request("wrong", nonce));
    EXPECT_EQ(d.kind, RequestAuth::Decision::Kind::kChallenge);
    EXPECT_EQ(d.code, 401);
  }
  EXPECT_EQ(stats_.auth_bad_integrity, config_.auth_failures_per_window);
  EXPECT_EQ(blocker_.blocked, std::vector<IpAddress>{tuple_.client.ip});
  EXPECT_EQ(stats_.sources_blocked, 1u);
  // Throttled: even the right password is dropped unanswered, before any HMAC.
  EXPECT_EQ(check(request("pass1", nonce)).kind, RequestAuth::Decision::Kind::kDropped);
  EXPECT_EQ(stats_.auth_throttled, 1u);
}

}  // namespace
}  // namespace kturn::turn
