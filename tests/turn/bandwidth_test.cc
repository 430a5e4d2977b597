// Bandwidth caps (admin.limits.allocation_kbps / listener_kbps): a burst passes, the excess is
// dropped and counted, and the budget refills with time; each direction has its own budget.
#include "stun/channel_data.h"
#include "turn/token_bucket.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

constexpr uint16_t kChannel = 0x4001;
const std::vector<uint8_t> kKilobyte(1000, 0x5A);
constexpr uint64_t kRate = 32 * 1000;  // bytes/s; the burst is the 16 KiB minimum

class BandwidthTest : public TurnTest {
 protected:
  void start(uint64_t allocation_rate, uint64_t listener_rate) {
    ServerConfig c = staticConfig();
    c.allocation_bytes_per_second = allocation_rate;
    c.listener_bytes_per_second = listener_rate;
    reset(c);
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
    ASSERT_EQ(channelBind(kChannel, peer_).cls(), stun::MessageClass::kSuccessResponse);
  }

  // Sends `n` 1000-byte ChannelData frames at the current time; returns how many were relayed.
  size_t clientBurst(size_t n) {
    size_t relayed = 0;
    std::vector<uint8_t> frame(4 + kKilobyte.size());
    stun::writeChannelDataHeader(frame.data(), kChannel, static_cast<uint16_t>(kKilobyte.size()));
    std::copy(kKilobyte.begin(), kKilobyte.end(), frame.begin() + 4);
    for (size_t i = 0; i < n; ++i) {
      fromClient(frame);
      relayed += actions_.to_peers.size();
    }
    return relayed;
  }

  size_t peerBurst(size_t n) {
    size_t relayed = 0;
    for (size_t i = 0; i < n; ++i) relayed += fromPeer(peer_, kKilobyte).has_value();
    return relayed;
  }

  const TransportAddress peer_ = addr("10.2.3.4:5000");
};

TEST(TokenBucket, BurstThenRefillAtTheRate) {
  TokenBucket bucket;
  const MonoTime t0{std::chrono::seconds(100)};
  const uint64_t burst = TokenBucket::burstFor(kRate);
  EXPECT_EQ(burst, TokenBucket::kMinBurstBytes);
  EXPECT_TRUE(bucket.take(burst, t0, kRate));
  EXPECT_FALSE(bucket.take(1, t0, kRate));
  // Refill is exact even in steps of microseconds: 1000 steps of 1 ms = 1 s = kRate bytes.
  uint64_t taken = 0;
  for (int i = 1; i <= 1000; ++i) {
    const MonoTime t = t0 + std::chrono::milliseconds(i);
    while (bucket.take(1, t, kRate)) ++taken;
  }
  EXPECT_EQ(taken, kRate);
}

TEST_F(BandwidthTest, AnAllocationOverItsCapIsDroppedThenRefills) {
  start(kRate, 0);
  const size_t first = clientBurst(40);
  EXPECT_EQ(first, TokenBucket::burstFor(kRate) / 1000);  // the burst, then nothing
  EXPECT_EQ(server_->stats().drop_over_bandwidth, 40 - first);
  // The other direction has its own budget.
  EXPECT_EQ(peerBurst(40), first);
  now_.mono += std::chrono::milliseconds(250);  // a quarter second refills kRate / 4 bytes
  EXPECT_EQ(clientBurst(40), kRate / 4 / 1000);
  advance(Seconds(10));  // a long pause refills the burst, not more
  EXPECT_EQ(clientBurst(40), first);
}

TEST_F(BandwidthTest, AListenerCapAppliesWithoutAnAllocationCap) {
  start(0, kRate);
  EXPECT_EQ(clientBurst(40), TokenBucket::burstFor(kRate) / 1000);
  EXPECT_GT(server_->stats().drop_over_bandwidth, 0u);
}

TEST_F(BandwidthTest, NoCapNoDrop) {
  start(0, 0);
  EXPECT_EQ(clientBurst(200), 200u);
  EXPECT_EQ(server_->stats().drop_over_bandwidth, 0u);
}

}  // namespace
}  // namespace kturn::turn::testing
