// Per-cluster traffic counters (STUNner's stunner_cluster_* series): relayed datagrams are
// attributed to the cluster whose endpoint admitted the peer, both ways, by channel and by
// Send/Data indication.
#include "stun/channel_data.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, RelayedTrafficIsCountedPerAdmittingCluster) {
  ServerConfig c = staticConfig();
  c.listeners[0].peers[0].cluster = 1;  // 10.2.0.0/16
  c.listeners[0].peers[1].cluster = 2;  // 10.3.0.5:<10000-20000>
  reset(c);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const auto pod = addr("10.2.0.9:4000");
  const auto media = addr("10.3.0.5:15000");
  ASSERT_EQ(channelBind(0x4001, pod).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(createPermission({media}).cls(), stun::MessageClass::kSuccessResponse);

  std::vector<uint8_t> frame(4 + 100);
  stun::writeChannelDataHeader(frame.data(), 0x4001, 100);
  fromClient(frame);                                        // to the pod: cluster 1, tx
  ASSERT_TRUE(fromPeer(pod, std::vector<uint8_t>(30, 1)));  // from the pod: cluster 1, rx
  fromClient(buildRequest(
      stun::Method::kSend,
      [&](stun::MessageBuilder& b) {
        b.addXorAddress(stun::attr::kXorPeerAddress, media)
            .add(stun::attr::kData, std::vector<uint8_t>(50, 2));
      },
      /*auth=*/false, stun::MessageClass::kIndication));      // to the media server: cluster 2
  ASSERT_TRUE(fromPeer(media, std::vector<uint8_t>(70, 3)));  // from it: cluster 2, rx

  const auto& clusters = server_->statsByCluster();
  ASSERT_GE(clusters.size(), 3u);
  EXPECT_EQ(clusters[1].tx_packets, 1u);
  EXPECT_EQ(clusters[1].tx_bytes, 100u);
  EXPECT_EQ(clusters[1].rx_packets, 1u);
  EXPECT_EQ(clusters[1].rx_bytes, 30u);
  EXPECT_EQ(clusters[2].tx_bytes, 50u);
  EXPECT_EQ(clusters[2].rx_bytes, 70u);
  EXPECT_EQ(clusters[0].tx_packets + clusters[0].rx_packets, 0u);
}

}  // namespace
}  // namespace kturn::turn::testing
