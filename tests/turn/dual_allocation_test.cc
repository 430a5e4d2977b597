// Dual allocations (RFC 8656 §7.2 ADDITIONAL-ADDRESS-FAMILY): one allocation with an IPv4 and an
// IPv6 relayed address, peers of both families, and Refresh releasing one half (§7.3).
#include "stun/channel_data.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

const std::vector<uint8_t> kPayload = {'d', 'u', 'a', 'l'};
const uint8_t kIpv4[] = {0x01, 0, 0, 0};
const uint8_t kIpv6[] = {0x02, 0, 0, 0};

class DualAllocationTest : public TurnTest {
 protected:
  DualAllocationTest() {
    relays_.ipv6 = true;
    ServerConfig c = staticConfig();
    c.listeners[0].peers.push_back(PeerRange{*IpAddress::parse("fd00:2::"), 64, 0, 65535});
    reset(std::move(c));
  }

  Reply allocateDual(const Fill& extra = {}) {
    return allocate([&](stun::MessageBuilder& b) {
      b.add(stun::attr::kAdditionalAddressFamily, kIpv6);
      if (extra) extra(b);
    });
  }

  // Every XOR-RELAYED-ADDRESS of a reply, in order.
  static std::vector<TransportAddress> relayedAddresses(const Reply& reply) {
    const stun::MessageView m = reply.view();
    std::vector<TransportAddress> out;
    for (const stun::Attribute& a : m.attributes()) {
      if (a.type != stun::attr::kXorRelayedAddress) continue;
      if (auto address = stun::decodeXorAddress(a.value, m.xorPad())) out.push_back(*address);
    }
    return out;
  }

  Reply refreshFamily(uint32_t lifetime, const uint8_t (&family)[4]) {
    return request(stun::Method::kRefresh, [&](stun::MessageBuilder& b) {
      b.addUint32(stun::attr::kLifetime, lifetime).add(stun::attr::kRequestedAddressFamily, family);
    });
  }

  // The reply has one relayed address (the IPv4 one) and ADDRESS-ERROR-CODE `code` for IPv6.
  static void expectIpv6Refused(const Reply& reply, int code) {
    ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse) << reply.errorCode();
    EXPECT_EQ(relayedAddresses(reply).size(), 1u);
    const auto aec = reply.view().value(stun::attr::kAddressErrorCode);
    ASSERT_TRUE(aec);
    EXPECT_EQ((*aec)[0], 0x02);
    EXPECT_EQ((*aec)[2] * 100 + (*aec)[3], code);
  }

  void sendIndication(const TransportAddress& peer) {
    fromClient(buildRequest(
        stun::Method::kSend,
        [&](stun::MessageBuilder& b) {
          b.addXorAddress(stun::attr::kXorPeerAddress, peer).add(stun::attr::kData, kPayload);
        },
        /*auth=*/false, stun::MessageClass::kIndication));
  }

  const TransportAddress peer4_ = addr("10.2.3.4:5000");
  const TransportAddress peer6_ = addr("[fd00:2::7]:5000");
};

TEST_F(DualAllocationTest, AllocateReturnsAnIpv4AndAnIpv6RelayedAddress) {
  auto reply = allocateDual();
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse) << reply.errorCode();
  const auto relayed = relayedAddresses(reply);
  ASSERT_EQ(relayed.size(), 2u);
  EXPECT_TRUE(relayed[0].ip.isV4());
  EXPECT_FALSE(relayed[1].ip.isV4());
  EXPECT_FALSE(reply.view().has(stun::attr::kAddressErrorCode));
  ASSERT_EQ(relays_.requests.size(), 1u);
  EXPECT_EQ(relays_.requests[0].family, AddressFamily::kIPv4);
  EXPECT_TRUE(relays_.requests[0].additional_ipv6);
  const Allocation* a = server_->findAllocation(tuple_);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->relayed, relayed[0]);
  EXPECT_EQ(a->relayed_additional, relayed[1]);
  EXPECT_EQ(server_->allocationCount(), 1u);  // one allocation, one quota slot
}

TEST_F(DualAllocationTest, RetransmittedAllocateGetsBothAddressesAgain) {
  auto first = allocateDual();
  ASSERT_EQ(first.cls(), stun::MessageClass::kSuccessResponse);
  // The identical request again (same transaction ID): the same two addresses, nothing opened.
  auto again = retransmitAllocate(
      [](stun::MessageBuilder& b) { b.add(stun::attr::kAdditionalAddressFamily, kIpv6); });
  ASSERT_TRUE(again);
  ASSERT_EQ(again->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(relayedAddresses(*again), relayedAddresses(first));
  EXPECT_EQ(relays_.requests.size(), 1u);
}

TEST_F(DualAllocationTest, PeersOfBothFamiliesArePermittedAndRelayed) {
  ASSERT_EQ(allocateDual().cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(createPermission({peer4_, peer6_}).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4001, peer6_).cls(), stun::MessageClass::kSuccessResponse);

  sendIndication(peer4_);
  ASSERT_EQ(sentToPeers().size(), 1u);
  EXPECT_EQ(sentToPeers()[0].first, peer4_);
  sendIndication(peer6_);
  ASSERT_EQ(sentToPeers().size(), 1u);
  EXPECT_EQ(sentToPeers()[0].first, peer6_);
  EXPECT_EQ(sentToPeers()[0].second, kPayload);

  // From the IPv6 peer back to the client over its channel.
  const auto back = fromPeer(peer6_, kPayload);
  ASSERT_TRUE(back);
  const auto cd = stun::parseChannelData(*back);
  ASSERT_TRUE(cd);
  EXPECT_EQ(cd->channel, 0x4001);
  EXPECT_TRUE(fromPeer(peer4_, kPayload).has_value());
}

TEST_F(DualAllocationTest, WithoutIpv6TheIpv4HalfIsGrantedAndTheOtherReported440) {
  relays_.ipv6 = false;
  expectIpv6Refused(allocateDual(), 440);
  EXPECT_EQ(createPermission({peer6_}).errorCode(), 443);
}

TEST_F(DualAllocationTest, NoFreeIpv6PortIsReported508) {
  relays_.ipv6_exhausted = true;
  expectIpv6Refused(allocateDual(), 508);
}

TEST_F(DualAllocationTest, EvenPortReserveOrReservationTokenWithAdditionalFamilyIs400) {
  const uint8_t reserve[] = {0x80};
  EXPECT_EQ(allocateDual([&](auto& b) { b.add(stun::attr::kEvenPort, reserve); }).errorCode(), 400);
  const uint8_t token[] = {0, 0, 0, 0, 0, 0, 0xAB, 0xCD};
  EXPECT_EQ(allocateDual([&](auto& b) { b.add(stun::attr::kReservationToken, token); }).errorCode(),
            400);
  EXPECT_TRUE(relays_.requests.empty());
}

TEST_F(DualAllocationTest, RefreshWithFamilyAndLifetimeZeroReleasesThatHalfOnly) {
  ASSERT_EQ(allocateDual().cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(createPermission({peer4_, peer6_}).cls(), stun::MessageClass::kSuccessResponse);
  const AllocationId id = server_->findAllocation(tuple_)->id;

  auto reply = refreshFamily(0, kIpv6);
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse) << reply.errorCode();
  EXPECT_EQ(reply.uint32(stun::attr::kLifetime), 0u);
  ASSERT_EQ(relays_.closed_families.size(), 1u);
  EXPECT_EQ(relays_.closed_families[0].first, id);
  EXPECT_EQ(relays_.closed_families[0].second, AddressFamily::kIPv6);
  EXPECT_TRUE(relays_.closed.empty());

  const Allocation* a = server_->findAllocation(tuple_);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->relayed.ip.isV4());
  EXPECT_FALSE(a->relayed_additional);
  // The IPv6 peer lost its permission with its relay; the IPv4 side relays on.
  EXPECT_FALSE(fromPeer(peer6_, kPayload));
  EXPECT_TRUE(fromPeer(peer4_, kPayload));
  EXPECT_EQ(createPermission({peer6_}).errorCode(), 443);
  EXPECT_EQ(refreshFamily(600, kIpv6).errorCode(), 443);

  // The remaining half is the whole allocation: deleting it ends the allocation.
  ASSERT_EQ(refreshFamily(0, kIpv4).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_EQ(relays_.closed.size(), 1u);
}

TEST_F(DualAllocationTest, ReleasingTheIpv4HalfLeavesTheIpv6RelayAsTheAllocations) {
  auto allocated = allocateDual();
  ASSERT_EQ(allocated.cls(), stun::MessageClass::kSuccessResponse);
  const auto relayed = relayedAddresses(allocated);
  ASSERT_EQ(relayed.size(), 2u);
  ASSERT_EQ(refreshFamily(0, kIpv4).cls(), stun::MessageClass::kSuccessResponse);
  const Allocation* a = server_->findAllocation(tuple_);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->relayed, relayed[1]);
  EXPECT_FALSE(a->relayed_additional);
  EXPECT_EQ(createPermission({peer4_}).errorCode(), 443);
  EXPECT_EQ(createPermission({peer6_}).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(DualAllocationTest, RefreshWithANonZeroLifetimeKeepsBothHalves) {
  ASSERT_EQ(allocateDual().cls(), stun::MessageClass::kSuccessResponse);
  auto reply = refreshFamily(900, kIpv6);
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(reply.uint32(stun::attr::kLifetime), 900u);
  EXPECT_TRUE(relays_.closed_families.empty());
  EXPECT_TRUE(server_->findAllocation(tuple_)->relayed_additional);
}

}  // namespace
}  // namespace kturn::turn::testing
