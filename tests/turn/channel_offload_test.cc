// The core's side of the kernel fast path (turn/channel_offload.h): which channels it offers,
// until when, when it takes them back, and how what the kernel relayed is counted.
#include "turn/channel_offload.h"

#include <map>

#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

struct FakeOffload : ChannelOffload {
  struct Entry {
    FiveTuple five_tuple;
    TransportAddress relayed;
    TransportAddress peer;
    MonoTime until;
  };
  bool offer(const Allocation& a, const ChannelBinding& c, MonoTime until) override {
    ++offers;
    if (full) return false;
    entries[{a.id.index, c.number}] = {a.five_tuple, a.relayed, c.peer, until};
    return true;
  }
  OffloadedTraffic withdraw(const Allocation& a, const ChannelBinding& c) override {
    ++withdrawals;
    entries.erase({a.id.index, c.number});
    return std::exchange(pending, {});
  }
  const Entry* entry(uint16_t channel) const {
    for (const auto& [key, e] : entries)
      if (key.second == channel) return &e;
    return nullptr;
  }

  std::map<std::pair<uint32_t, uint16_t>, Entry> entries;  // by allocation index, channel
  OffloadedTraffic pending;                                // what the next withdraw() reports
  bool full = false;
  int offers = 0;
  int withdrawals = 0;
};

struct RecordingObserver : SessionObserver {
  void onAllocationEnd(const Allocation& a, SessionEnd, const Now&) override {
    packets_to_peers = a.packets_to_peers;
    bytes_to_client = a.bytes_to_client;
  }
  uint64_t packets_to_peers = 0;
  uint64_t bytes_to_client = 0;
};

class ChannelOffloadTest : public TurnTest {
 protected:
  ChannelOffloadTest() { reset(offloadConfig()); }

  static ServerConfig offloadConfig() {
    ServerConfig c = staticConfig();
    c.listeners[0].offloadable = true;
    c.listeners[0].peers[0].cluster = 1;
    return c;
  }
  void reset(ServerConfig c) {
    TurnTest::reset(std::move(c));
    server_->setChannelOffload(&offload_);
    server_->setSessionObserver(&observer_);
  }
  void allocateAndBind() {
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
    ASSERT_EQ(channelBind(0x4001, pod_).cls(), stun::MessageClass::kSuccessResponse);
  }

  FakeOffload offload_;
  RecordingObserver observer_;
  const TransportAddress pod_ = addr("10.2.0.9:4000");
};

TEST_F(ChannelOffloadTest, AChannelBindOffersTheChannelUntilItsPermissionExpires) {
  const MonoTime t0 = now_.mono;
  allocateAndBind();
  const FakeOffload::Entry* e = offload_.entry(0x4001);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->five_tuple, tuple_);
  EXPECT_EQ(e->peer, pod_);
  EXPECT_EQ(e->relayed, server_->findAllocation(tuple_)->relayed);
  // Permission 300 s, channel 600 s, allocation 600 s: the earliest wins.
  EXPECT_EQ(e->until, t0 + Seconds(300));
  EXPECT_EQ(server_->stats().channels_offloaded, 1u);
}

TEST_F(ChannelOffloadTest, CreatePermissionRefreshAndChannelBindMoveTheEntry) {
  const MonoTime t0 = now_.mono;
  allocateAndBind();  // permission t0+300, channel and allocation t0+600
  advance(Seconds(200));
  ASSERT_EQ(createPermission({pod_}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(offload_.entry(0x4001)->until, t0 + Seconds(500));  // the permission's
  advance(Seconds(200));
  ASSERT_EQ(createPermission({pod_}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(offload_.entry(0x4001)->until, t0 + Seconds(600));  // channel and allocation
  ASSERT_EQ(refresh(3600).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(channelBind(0x4001, pod_).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(offload_.entry(0x4001)->until, t0 + Seconds(700));  // the permission's again
  EXPECT_EQ(server_->stats().channels_offloaded, 1u);           // one channel, moved
}

TEST_F(ChannelOffloadTest, AnExpiredChannelIsWithdrawnAndWhatTheKernelRelayedIsCounted) {
  allocateAndBind();
  ASSERT_EQ(refresh(3600).cls(), stun::MessageClass::kSuccessResponse);
  offload_.pending = {.packets_to_peer = 3, .bytes_to_peer = 300};
  advance(Seconds(601));
  EXPECT_EQ(offload_.entry(0x4001), nullptr);
  EXPECT_EQ(server_->stats().client_packets_relayed, 3u);
  EXPECT_EQ(server_->stats().offload_packets_to_peer, 3u);
}

TEST_F(ChannelOffloadTest, ADeletedAllocationWithdrawsFirstSoItsSessionRecordIsExact) {
  allocateAndBind();
  server_->onOffloadedTraffic(tuple_, 0x4001,
                              {.packets_to_peer = 10,
                               .bytes_to_peer = 1000,
                               .packets_to_client = 4,
                               .bytes_to_client = 400});
  offload_.pending = {
      .packets_to_peer = 1, .bytes_to_peer = 100, .packets_to_client = 1, .bytes_to_client = 50};
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(offload_.entries.empty());
  EXPECT_EQ(observer_.packets_to_peers, 11u);
  EXPECT_EQ(observer_.bytes_to_client, 450u);
  const ServerStats s = server_->stats();
  EXPECT_EQ(s.client_packets_relayed, 11u);
  EXPECT_EQ(s.client_bytes_relayed, 1100u);
  EXPECT_EQ(s.peer_packets_relayed, 5u);
  EXPECT_EQ(s.offload_bytes_to_client, 450u);
  ASSERT_GE(server_->statsByCluster().size(), 2u);
  EXPECT_EQ(server_->statsByCluster()[1].tx_packets, 11u);
  EXPECT_EQ(server_->statsByCluster()[1].rx_bytes, 450u);
}

TEST_F(ChannelOffloadTest, AConfigThatNoLongerRoutesThePeerWithdrawsAtOnce) {
  allocateAndBind();
  ServerConfig c = offloadConfig();
  c.listeners[0].peers.erase(c.listeners[0].peers.begin());  // 10.2.0.0/16 gone
  applyConfig(c);
  EXPECT_EQ(offload_.entry(0x4001), nullptr);
  EXPECT_EQ(offload_.withdrawals, 1);
  applyConfig(offloadConfig());  // back: offered again without waiting for the client
  EXPECT_NE(offload_.entry(0x4001), nullptr);
}

TEST_F(ChannelOffloadTest, ABandwidthCapKeepsChannelsInUserSpace) {
  ServerConfig capped = offloadConfig();
  capped.allocation_bytes_per_second = 1'000'000;
  reset(capped);
  allocateAndBind();
  EXPECT_TRUE(offload_.entries.empty());
  applyConfig(offloadConfig());  // cap removed
  EXPECT_NE(offload_.entry(0x4001), nullptr);
  applyConfig(capped);  // and back
  EXPECT_EQ(offload_.entry(0x4001), nullptr);
}

TEST_F(ChannelOffloadTest, OnlyTurnUdpListenersAreOffloaded) {
  ServerConfig dtls = offloadConfig();
  dtls.listeners[0].offloadable = false;  // TURN-DTLS: encrypted, the kernel cannot read it
  reset(dtls);
  allocateAndBind();
  EXPECT_EQ(offload_.offers, 0);
}

TEST_F(ChannelOffloadTest, TurnOverTcpIsNotOffloaded) {
  tuple_.protocol = TransportProtocol::kTcp;
  allocateAndBind();
  EXPECT_EQ(offload_.offers, 0);
}

TEST_F(ChannelOffloadTest, AFullKernelMapLeavesTheChannelToTheCore) {
  offload_.full = true;
  allocateAndBind();
  EXPECT_EQ(server_->stats().channels_offload_refused, 1u);
  EXPECT_EQ(server_->stats().channels_offloaded, 0u);
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(offload_.withdrawals, 0);  // nothing to take back
}

TEST_F(ChannelOffloadTest, TurningOffloadOffAndOnTakesBackAndReoffersBoundChannels) {
  allocateAndBind();
  server_->setChannelOffload(nullptr);
  EXPECT_TRUE(offload_.entries.empty());
  server_->setChannelOffload(&offload_);
  EXPECT_NE(offload_.entry(0x4001), nullptr);
}

}  // namespace
}  // namespace kturn::turn::testing
