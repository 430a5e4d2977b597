// TURN over TCP in the core: ChannelData to a TCP client is padded to four bytes (RFC 8656
// §12.5), and the allocation ends with its connection (RFC 8656 §3.1).
#include "stun/channel_data.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

struct EndObserver : SessionObserver {
  void onAllocationEnd(const Allocation&, SessionEnd reason, const Now&) override {
    reasons.push_back(reason);
  }
  std::vector<SessionEnd> reasons;
};

TEST_F(TurnTest, ChannelDataToATcpClientIsPaddedAndTheConnectionEndsTheAllocation) {
  tuple_.protocol = TransportProtocol::kTcp;
  EndObserver observer;
  server_->setSessionObserver(&observer);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const auto peer = addr("10.2.0.9:4000");
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);

  const auto frame = fromPeer(peer, std::vector<uint8_t>(5, 0xAB));
  ASSERT_TRUE(frame);
  ASSERT_EQ(frame->size(), 12u);  // 4-byte header, 5 bytes, 3 bytes of zero padding
  EXPECT_EQ(stun::load16(frame->data() + 2), 5u);
  EXPECT_EQ((*frame)[9], 0);
  EXPECT_EQ((*frame)[11], 0);

  server_->onClientClosed(tuple_, now_);
  EXPECT_EQ(server_->allocationCount(), 0u);
  ASSERT_EQ(observer.reasons.size(), 1u);
  EXPECT_EQ(observer.reasons[0], SessionEnd::kConnectionClosed);
  EXPECT_EQ(server_->stats().allocations_disconnected, 1u);
}

TEST_F(TurnTest, ChannelDataToAUdpClientIsNotPadded) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const auto peer = addr("10.2.0.9:4000");
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);
  const auto frame = fromPeer(peer, std::vector<uint8_t>(5, 0xAB));
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->size(), 9u);
}

}  // namespace
}  // namespace kturn::turn::testing
