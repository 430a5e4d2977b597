// Bad input: truncated, oversized and random datagrams never crash the core, are counted, and do
// not disturb valid traffic from the same client.
#include <random>

#include "stun/channel_data.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, GarbageIsCountedAndValidTrafficContinues) {
  // Flipped bytes in authenticated requests are failed authentications; with the throttle on,
  // this client would (rightly) be ignored for a while. This test is about parsing and state.
  ServerConfig c = staticConfig();
  c.auth_failures_per_window = 0;
  reset(c);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const auto peer = addr("10.2.3.4:5000");
  ASSERT_EQ(channelBind(0x4001, peer).cls(), stun::MessageClass::kSuccessResponse);
  const auto valid_request = buildRequest(stun::Method::kRefresh,
                                          [](auto& b) { b.addUint32(stun::attr::kLifetime, 600); });

  std::mt19937 rng(12345);
  size_t responses = 0;
  const uint64_t drops_before = server_->stats().drop_malformed + server_->stats().drop_not_turn;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> d;
    switch (i % 4) {
      case 0: {  // random bytes of random length, including oversize
        d.resize(rng() % 2000);
        for (auto& b : d) b = static_cast<uint8_t>(rng());
        break;
      }
      case 1: {  // a valid request truncated at a random point
        d.assign(valid_request.begin(), valid_request.begin() + rng() % valid_request.size());
        break;
      }
      case 2: {  // a valid request with random bytes flipped
        d = valid_request;
        for (int k = 0; k < 3; ++k) d[rng() % d.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        break;
      }
      default: {  // ChannelData with a lying length
        d = {0x40, 0x01, static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng()), 1, 2};
        break;
      }
    }
    actions_.clear();
    server_->onClientPacket(kListener, tuple_, d, now_, actions_);
    responses += actions_.to_clients.size();
    // Random peers and sizes on the relay side too.
    std::vector<uint8_t> buffer(PeerPacket::kHeadroom + 1500 + PeerPacket::kTailroom);
    for (auto& b : buffer) b = static_cast<uint8_t>(rng());
    TransportAddress from = peer;
    from.port = static_cast<uint16_t>(rng());
    const size_t len = rng() % 1501;
    server_->onPeerPacket(server_->findAllocation(tuple_)->id, from,
                          {buffer, PeerPacket::kHeadroom, len}, now_, actions_);
  }
  // Error responses are small and bounded: garbage never amplifies.
  for (const auto& s : actions_.to_clients) EXPECT_LE(s.data.size(), 1600u);
  EXPECT_GT(server_->stats().drop_malformed + server_->stats().drop_not_turn, drops_before);

  // The allocation and channel still work.
  ASSERT_EQ(server_->allocationCount(), 1u);
  std::vector<uint8_t> frame = {0x40, 0x01, 0x00, 0x02, 'o', 'k'};
  actions_.clear();
  server_->onClientPacket(kListener, tuple_, frame, now_, actions_);
  ASSERT_EQ(actions_.to_peers.size(), 1u);
  EXPECT_EQ(actions_.to_peers[0].peer, peer);
  EXPECT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TurnTest, MalformedRequestWithSoundHeaderGets400) {
  auto bytes = buildRequest(stun::Method::kBinding, {}, false);
  bytes[22] = 0x7F;  // first attribute (FINGERPRINT) length now overruns
  auto reply = fromClient(bytes);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 400);
}

TEST_F(TurnTest, BadFingerprintIsDroppedSilently) {
  auto bytes = buildRequest(stun::Method::kBinding, {}, false);
  bytes.back() ^= 0xFF;
  EXPECT_FALSE(fromClient(bytes));
  EXPECT_EQ(server_->stats().drop_malformed, 1u);
}

TEST_F(TurnTest, ResponsesAndUnknownIndicationsAreIgnored) {
  EXPECT_FALSE(fromClient(
      buildRequest(stun::Method::kBinding, {}, false, stun::MessageClass::kSuccessResponse)));
  EXPECT_FALSE(
      fromClient(buildRequest(stun::Method::kBinding, {}, false, stun::MessageClass::kIndication)));
  EXPECT_EQ(server_->stats().drop_ignored, 2u);
}

}  // namespace
}  // namespace kturn::turn::testing
