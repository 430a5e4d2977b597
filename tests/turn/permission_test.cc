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

}  // namespace
}  // namespace kturn::turn::testing
