// The data path: Send/Data indications and ChannelData in both directions, with the allow-list
// checked per packet, and expiry on the simulated clock.
#include "stun/channel_data.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

const std::vector<uint8_t> kPayload = {'h', 'e', 'l', 'l', 'o'};

class RelayTest : public TurnTest {
 protected:
  void SetUp() override { ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse); }

  void sendIndication(const TransportAddress& peer, const std::vector<uint8_t>& data) {
    fromClient(buildRequest(
        stun::Method::kSend,
        [&](stun::MessageBuilder& b) {
          b.addXorAddress(stun::attr::kXorPeerAddress, peer).add(stun::attr::kData, data);
        },
        /*auth=*/false, stun::MessageClass::kIndication));
  }

  void sendChannelData(uint16_t channel, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> frame(4 + data.size());
    stun::writeChannelDataHeader(frame.data(), channel, static_cast<uint16_t>(data.size()));
    std::copy(data.begin(), data.end(), frame.begin() + 4);
    EXPECT_FALSE(fromClient(frame));  // nothing goes back to the client
  }
};

TEST_F(RelayTest, SendIndicationReachesAPermittedPeer) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  sendIndication(peer, kPayload);
  auto sent = sentToPeers();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, peer);
  EXPECT_EQ(sent[0].second, kPayload);
  EXPECT_EQ(actions_.to_peers[0].allocation, server_->findAllocation(tuple_)->id);
  EXPECT_EQ(server_->stats().client_packets_relayed, 1u);
  EXPECT_EQ(server_->stats().client_bytes_relayed, kPayload.size());
}

TEST_F(RelayTest, SendIndicationWithoutPermissionIsDropped) {
  sendIndication(addr("10.2.3.4:5000"), kPayload);
  EXPECT_TRUE(sentToPeers().empty());
  EXPECT_EQ(server_->stats().drop_no_permission, 1u);
}

TEST_F(RelayTest, PortRangeIsCheckedPerPacket) {
  ASSERT_EQ(createPermission({addr("10.3.0.5:0")}).cls(), stun::MessageClass::kSuccessResponse);
  sendIndication(addr("10.3.0.5:15000"), kPayload);
  EXPECT_EQ(sentToPeers().size(), 1u);
  sendIndication(addr("10.3.0.5:9000"), kPayload);
  EXPECT_TRUE(sentToPeers().empty());
  EXPECT_EQ(server_->stats().drop_peer_denied, 1u);
  EXPECT_FALSE(fromPeer(addr("10.3.0.5:9000"), kPayload));
  EXPECT_TRUE(fromPeer(addr("10.3.0.5:15000"), kPayload));
}

TEST_F(RelayTest, ChannelDataRelaysBothWays) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);
  sendChannelData(0x4001, kPayload);
  auto sent = sentToPeers();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, peer);
  EXPECT_EQ(sent[0].second, kPayload);

  auto back = fromPeer(peer, kPayload);
  ASSERT_TRUE(back);
  auto cd = stun::parseChannelData(*back);
  ASSERT_TRUE(cd);
  EXPECT_EQ(cd->channel, 0x4001);
  EXPECT_EQ(std::vector<uint8_t>(cd->data.begin(), cd->data.end()), kPayload);
  EXPECT_EQ(back->size(), 4 + kPayload.size());  // no padding over UDP
}

TEST_F(RelayTest, ChannelDataOnUnboundChannelIsDropped) {
  sendChannelData(0x4005, kPayload);
  EXPECT_TRUE(sentToPeers().empty());
  EXPECT_EQ(server_->stats().drop_unknown_channel, 1u);
}

TEST_F(RelayTest, PeerWithoutChannelGetsADataIndication) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  auto back = fromPeer(peer, kPayload);
  ASSERT_TRUE(back);
  auto m = stun::MessageView::parse(*back);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->method(), stun::Method::kData);
  EXPECT_EQ(m->messageClass(), stun::MessageClass::kIndication);
  EXPECT_EQ(stun::decodeXorAddress(*m->value(stun::attr::kXorPeerAddress), m->xorPad()), peer);
  const auto data = *m->value(stun::attr::kData);
  EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), kPayload);
  EXPECT_EQ(back->size() % 4, 0u);
}

TEST_F(RelayTest, PeerWithoutPermissionIsDropped) {
  EXPECT_FALSE(fromPeer(addr("10.2.3.4:5000"), kPayload));
  EXPECT_EQ(server_->stats().drop_no_permission, 1u);
}

TEST_F(RelayTest, WithdrawnRouteStopsRelayingImmediatelyInBothDirections) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);
  sendChannelData(0x4001, kPayload);
  ASSERT_EQ(sentToPeers().size(), 1u);

  ServerConfig c = staticConfig();
  c.listeners[0].peers.erase(c.listeners[0].peers.begin());  // drop 10.2.0.0/16
  applyConfig(c);
  sendChannelData(0x4001, kPayload);
  EXPECT_TRUE(sentToPeers().empty());
  EXPECT_FALSE(fromPeer(peer, kPayload));
  EXPECT_EQ(server_->stats().drop_peer_denied, 2u);
  // The allocation itself lives on.
  EXPECT_EQ(server_->allocationCount(), 1u);

  applyConfig(staticConfig());  // route restored: relaying resumes
  sendChannelData(0x4001, kPayload);
  EXPECT_EQ(sentToPeers().size(), 1u);
}

TEST_F(RelayTest, PermissionExpiresAfterFiveMinutesUnlessRefreshed) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  advance(Seconds(299));
  EXPECT_TRUE(fromPeer(peer, kPayload));
  advance(Seconds(2));
  EXPECT_FALSE(fromPeer(peer, kPayload));
  EXPECT_TRUE(server_->findAllocation(tuple_)->permissions.empty());  // swept by the timer
}

TEST_F(RelayTest, RefreshedPermissionSurvives) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  advance(Seconds(200));
  ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  advance(Seconds(200));
  EXPECT_TRUE(fromPeer(peer, kPayload));
}

TEST_F(RelayTest, ChannelExpiresAfterTenMinutes) {
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(refresh(3600).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);
  // Keep the permission alive on its own; the channel is not refreshed.
  for (int i = 0; i < 3; ++i) {
    advance(Seconds(240));
    ASSERT_EQ(createPermission({peer}).cls(), stun::MessageClass::kSuccessResponse);
  }
  // 720 s: the channel is gone, the peer now arrives as a Data indication.
  auto back = fromPeer(peer, kPayload);
  ASSERT_TRUE(back);
  EXPECT_TRUE(stun::looksLikeStun(*back));
  EXPECT_TRUE(server_->findAllocation(tuple_)->channels.empty());
}

TEST_F(RelayTest, AllocationExpiresAtItsLifetimeAndReleasesItsRelay) {
  advance(Seconds(599));
  EXPECT_EQ(server_->allocationCount(), 1u);
  advance(Seconds(2));
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_EQ(relays_.closed.size(), 1u);
  EXPECT_EQ(server_->stats().allocations_expired, 1u);
}

TEST_F(RelayTest, RefreshExtendsTheAllocation) {
  advance(Seconds(500));
  ASSERT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
  advance(Seconds(500));
  EXPECT_EQ(server_->allocationCount(), 1u);
  advance(Seconds(101));
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(RelayTest, StaleAllocationIdFromTheIoLayerIsIgnored) {
  const AllocationId old = server_->findAllocation(tuple_)->id;
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  nonce_.clear();
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);  // reuses the slot
  ASSERT_EQ(createPermission({addr("10.2.3.4:5000")}).cls(), stun::MessageClass::kSuccessResponse);
  std::vector<uint8_t> buffer(PeerPacket::kHeadroom + 8 + PeerPacket::kTailroom);
  actions_.clear();
  server_->onPeerPacket(old, addr("10.2.3.4:5000"), {buffer, PeerPacket::kHeadroom, 8}, now_,
                        actions_);
  EXPECT_TRUE(actions_.empty());
  EXPECT_EQ(server_->stats().drop_no_allocation, 1u);
}

}  // namespace
}  // namespace kturn::turn::testing
