// CreatePermission and ChannelBind (RFC 8656 §9, §11) against the listener's peer allow-list.
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

class PermissionTest : public TurnTest {
 protected:
  void SetUp() override { ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse); }
};

TEST_F(PermissionTest, RoutedPeerGetsAPermission) {
  EXPECT_EQ(createPermission({addr("10.2.3.4:5000")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->findAllocation(tuple_)->permissions.size(), 1u);
}

TEST_F(PermissionTest, PeerOutsideEveryClusterIs403) {
  EXPECT_EQ(createPermission({addr("10.9.9.9:5000")}).errorCode(), 403);
  EXPECT_EQ(server_->stats().permission_denied, 1u);
  EXPECT_TRUE(server_->findAllocation(tuple_)->permissions.empty());
}

TEST_F(PermissionTest, OneRefusedPeerInstallsNone) {
  EXPECT_EQ(createPermission({addr("10.2.3.4:5000"), addr("10.9.9.9:5000")}).errorCode(), 403);
  EXPECT_TRUE(server_->findAllocation(tuple_)->permissions.empty());
}

TEST_F(PermissionTest, PortRestrictedEndpointAdmitsTheIp) {
  // 10.3.0.5 is routed on ports 10000-20000 only; permissions carry no port (RFC 8656 §9).
  EXPECT_EQ(createPermission({addr("10.3.0.5:1")}).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(PermissionTest, WithoutPeerAddressIs400) {
  EXPECT_EQ(createPermission({}).errorCode(), 400);
}

TEST_F(PermissionTest, Ipv6PeerOnIpv4RelayIs443) {
  EXPECT_EQ(createPermission({addr("[2001:db8::1]:5000")}).errorCode(), 443);
}

TEST_F(TurnTest, CreatePermissionWithoutAllocationIs437) {
  EXPECT_EQ(createPermission({addr("10.2.3.4:5000")}).errorCode(), 437);
}

TEST_F(PermissionTest, ChannelBindInstallsChannelAndPermission) {
  EXPECT_EQ(channelBind(0x4000, addr("10.2.3.4:5000")).cls(), stun::MessageClass::kSuccessResponse);
  Allocation* a = server_->findAllocation(tuple_);
  ASSERT_EQ(a->channels.size(), 1u);
  EXPECT_EQ(a->channels[0].number, 0x4000);
  ASSERT_EQ(a->permissions.size(), 1u);
  EXPECT_EQ(a->permissions[0].peer, addr("10.2.3.4:0").ip);
  // Rebinding the same pair refreshes it.
  EXPECT_EQ(channelBind(0x4000, addr("10.2.3.4:5000")).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(a->channels.size(), 1u);
}

TEST_F(PermissionTest, ChannelNumberOutOfRangeIs400) {
  EXPECT_EQ(channelBind(0x3FFF, addr("10.2.3.4:5000")).errorCode(), 400);
  EXPECT_EQ(channelBind(0x8000, addr("10.2.3.4:5000")).errorCode(), 400);
  // RFC 5766's upper range, still used by clients, is accepted.
  EXPECT_EQ(channelBind(0x7FFF, addr("10.2.3.4:5000")).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(PermissionTest, ChannelAndPeerCannotBeRebound) {
  ASSERT_EQ(channelBind(0x4000, addr("10.2.3.4:5000")).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4000, addr("10.2.3.5:5000")).errorCode(), 400);  // channel taken
  EXPECT_EQ(channelBind(0x4001, addr("10.2.3.4:5000")).errorCode(), 400);  // peer taken
}

TEST_F(PermissionTest, ChannelBindToUnroutedPeerOrPortIs403) {
  EXPECT_EQ(channelBind(0x4000, addr("10.9.9.9:5000")).errorCode(), 403);
  // 10.3.0.5 only on 10000-20000: ChannelBind names a port, so the port is checked.
  EXPECT_EQ(channelBind(0x4001, addr("10.3.0.5:9999")).errorCode(), 403);
  EXPECT_EQ(channelBind(0x4002, addr("10.3.0.5:10000")).cls(),
            stun::MessageClass::kSuccessResponse);
}

TEST_F(PermissionTest, ChannelBindIpv6PeerOnIpv4RelayIs443) {
  EXPECT_EQ(channelBind(0x4000, addr("[2001:db8::1]:5000")).errorCode(), 443);
}

TEST_F(PermissionTest, ChannelBindWithoutPeerIs400) {
  auto reply = request(stun::Method::kChannelBind, [](stun::MessageBuilder& b) {
    const uint8_t number[] = {0x40, 0x00, 0, 0};
    b.add(stun::attr::kChannelNumber, number);
  });
  EXPECT_EQ(reply.errorCode(), 400);
}

// admin.limits.max_permissions and max_channels: per allocation, applied with the config
// snapshot (the allocation here was made under the defaults, 64 and 64).
class CapacityTest : public PermissionTest {
 protected:
  void withLimits(uint32_t permissions, uint32_t channels) {
    ServerConfig c = staticConfig();
    c.max_permissions_per_allocation = permissions;
    c.max_channels_per_allocation = channels;
    applyConfig(c);
  }
  Allocation& allocation() { return *server_->findAllocation(tuple_); }
  bool hasPermission(const char* peer) {
    return allocation().findPermission(addr(peer).ip) != nullptr;
  }
};

TEST_F(CapacityTest, DefaultsAre64PermissionsAnd64Channels) {
  EXPECT_EQ(ServerConfig{}.max_permissions_per_allocation, 64u);
  EXPECT_EQ(ServerConfig{}.max_channels_per_allocation, 64u);
  std::vector<TransportAddress> peers;
  for (int i = 1; i <= 64; ++i) {
    peers.push_back(addr(("10.2.1." + std::to_string(i) + ":5000").c_str()));
  }
  // Two requests: a message carries at most 40 attributes (stun::MessageView::kMaxAttributes).
  const std::vector<TransportAddress> first(peers.begin(), peers.begin() + 32);
  const std::vector<TransportAddress> second(peers.begin() + 32, peers.end());
  ASSERT_EQ(createPermission(first).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(createPermission(second).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocation().permissions.size(), 64u);
  EXPECT_EQ(createPermission({addr("10.2.2.1:5000")}).errorCode(), 508);
  for (uint16_t i = 0; i < 64; ++i) {
    ASSERT_EQ(channelBind(0x4000 + i, peers[i]).cls(), stun::MessageClass::kSuccessResponse) << i;
  }
  EXPECT_EQ(channelBind(0x4040, addr("10.2.1.1:6000")).errorCode(), 508);
}

TEST_F(CapacityTest, PermissionBeyondTheLimitIs508AndInstallsNone) {
  withLimits(/*permissions=*/3, /*channels=*/64);
  ASSERT_EQ(createPermission({addr("10.2.0.1:1"), addr("10.2.0.2:1")}).cls(),
            stun::MessageClass::kSuccessResponse);
  const MonoTime first_expiry = allocation().findPermission(addr("10.2.0.1:0").ip)->expires;
  advance(Seconds(10));
  // Two new peers with one slot left: refused as a whole, the refresh of 10.2.0.1 included.
  EXPECT_EQ(
      createPermission({addr("10.2.0.1:1"), addr("10.2.0.3:1"), addr("10.2.0.4:1")}).errorCode(),
      508);
  EXPECT_EQ(server_->stats().permissions_rejected_capacity, 1u);
  EXPECT_EQ(allocation().permissions.size(), 2u);
  EXPECT_FALSE(hasPermission("10.2.0.3:0"));
  EXPECT_FALSE(hasPermission("10.2.0.4:0"));
  EXPECT_EQ(allocation().findPermission(addr("10.2.0.1:0").ip)->expires, first_expiry);
  // One new peer fits.
  EXPECT_EQ(createPermission({addr("10.2.0.3:1")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocation().permissions.size(), 3u);
}

TEST_F(CapacityTest, RefreshingPermissionsIsNotCounted) {
  withLimits(/*permissions=*/2, /*channels=*/64);
  ASSERT_EQ(createPermission({addr("10.2.0.1:1"), addr("10.2.0.2:1")}).cls(),
            stun::MessageClass::kSuccessResponse);
  // At the limit: refreshing both, even named twice in one request, still succeeds.
  advance(Seconds(200));
  EXPECT_EQ(createPermission({addr("10.2.0.1:1"), addr("10.2.0.2:1"), addr("10.2.0.1:2")}).cls(),
            stun::MessageClass::kSuccessResponse);
  advance(Seconds(200));  // 400 s after they were created: alive only because refreshed
  EXPECT_TRUE(hasPermission("10.2.0.1:0"));
  EXPECT_TRUE(hasPermission("10.2.0.2:0"));
  EXPECT_EQ(server_->stats().permissions_rejected_capacity, 0u);
  EXPECT_EQ(createPermission({addr("10.2.0.3:1")}).errorCode(), 508);
}

TEST_F(CapacityTest, ANewPeerNamedTwiceCountsOnce) {
  withLimits(/*permissions=*/1, /*channels=*/64);
  EXPECT_EQ(createPermission({addr("10.2.0.1:1"), addr("10.2.0.1:2")}).cls(),
            stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocation().permissions.size(), 1u);
}

TEST_F(CapacityTest, ExpiredPermissionsFreeTheirSlots) {
  withLimits(/*permissions=*/1, /*channels=*/64);
  ASSERT_EQ(createPermission({addr("10.2.0.1:1")}).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(createPermission({addr("10.2.0.2:1")}).errorCode(), 508);
  advance(Seconds(301));  // permissions last 300 s
  EXPECT_EQ(createPermission({addr("10.2.0.2:1")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_FALSE(hasPermission("10.2.0.1:0"));
}

TEST_F(CapacityTest, ChannelBeyondTheLimitIs508AndRebindingIsNotCounted) {
  withLimits(/*permissions=*/64, /*channels=*/2);
  ASSERT_EQ(channelBind(0x4000, addr("10.2.0.1:5000")).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4001, addr("10.2.0.2:5000")).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4002, addr("10.2.0.3:5000")).errorCode(), 508);
  EXPECT_EQ(server_->stats().channels_rejected_capacity, 1u);
  EXPECT_EQ(allocation().channels.size(), 2u);
  EXPECT_FALSE(hasPermission("10.2.0.3:0"));  // a refused ChannelBind installs no permission
  // Refreshing a binding at the limit passes.
  EXPECT_EQ(channelBind(0x4000, addr("10.2.0.1:5000")).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->stats().channels_rejected_capacity, 1u);
  // An expired binding frees its slot (channels last 600 s; keep the allocation alive).
  advance(Seconds(300));
  ASSERT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4000, addr("10.2.0.1:5000")).cls(), stun::MessageClass::kSuccessResponse);
  advance(Seconds(301));  // 0x4001 expired, 0x4000 refreshed 301 s ago
  EXPECT_EQ(channelBind(0x4002, addr("10.2.0.3:5000")).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(CapacityTest, ChannelBindNeedingAPermissionBeyondTheLimitIs508) {
  withLimits(/*permissions=*/1, /*channels=*/64);
  ASSERT_EQ(createPermission({addr("10.2.0.1:1")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4000, addr("10.2.0.2:5000")).errorCode(), 508);
  EXPECT_EQ(server_->stats().permissions_rejected_capacity, 1u);
  EXPECT_TRUE(allocation().channels.empty());
  // A channel to a peer whose IP already has its permission needs no new one.
  EXPECT_EQ(channelBind(0x4000, addr("10.2.0.1:5000")).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(CapacityTest, LimitLoweredOnReloadKeepsWhatIsHeld) {
  ASSERT_EQ(createPermission({addr("10.2.0.1:1"), addr("10.2.0.2:1"), addr("10.2.0.3:1")}).cls(),
            stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4000, addr("10.2.0.1:5000")).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4001, addr("10.2.0.2:5000")).cls(), stun::MessageClass::kSuccessResponse);
  withLimits(/*permissions=*/1, /*channels=*/1);
  EXPECT_EQ(allocation().permissions.size(), 3u);
  EXPECT_EQ(allocation().channels.size(), 2u);
  // Refreshes still pass over the lowered limits; anything new is refused.
  EXPECT_EQ(createPermission({addr("10.2.0.3:1")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4001, addr("10.2.0.2:5000")).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(createPermission({addr("10.2.0.4:1")}).errorCode(), 508);
  EXPECT_EQ(channelBind(0x4002, addr("10.2.0.3:5000")).errorCode(), 508);
}

}  // namespace
}  // namespace kturn::turn::testing
