// ChannelOffloader against a fake of the kernel's maps: the entries it writes for a channel,
// the counter slots it hands out and takes back, and the growth it reports.
#include "worker/channel_offloader.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "worker/fake_offload_maps.h"

namespace kturn::worker {
namespace {

using testing::FakeMaps;

TransportAddress addr(const char* text) { return *TransportAddress::parse(text); }

std::vector<uint8_t> mapped(const char* ip) {
  std::vector<uint8_t> out(16, 0);
  out[10] = out[11] = 0xff;
  inet_pton(AF_INET, ip, out.data() + 12);
  return out;
}

class ChannelOffloaderTest : public ::testing::Test {
 protected:
  ChannelOffloaderTest() {
    allocation_.id = {3, 1};
    allocation_.listener = 2;
    allocation_.five_tuple = {TransportProtocol::kUdp, addr("192.0.2.10:40000"),
                              addr("198.51.100.1:3478")};
    allocation_.relayed = addr("198.51.100.1:50000");
    channel_.number = 0x4001;
    channel_.peer = addr("10.2.0.9:4000");
  }

  turn::MonoTime at(int seconds) { return turn::MonoTime(std::chrono::seconds(seconds)); }

  FakeMaps maps_;
  turn::Allocation allocation_;
  turn::ChannelBinding channel_;
};

TEST_F(ChannelOffloaderTest, AnOfferWritesBothDirectionsWithPairedCounterSlots) {
  ChannelOffloader offloader(maps_, 10, 6);
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  ASSERT_EQ(maps_.channels.size(), 1u);
  ASSERT_EQ(maps_.peers.size(), 1u);

  const auto& [ck_bytes, cv] = *maps_.channels.begin();
  kturn_channel_key ck;
  std::memcpy(&ck, ck_bytes.data(), sizeof(ck));
  EXPECT_EQ(std::vector<uint8_t>(ck.client_addr, ck.client_addr + 16), mapped("192.0.2.10"));
  EXPECT_EQ(std::vector<uint8_t>(ck.server_addr, ck.server_addr + 16), mapped("198.51.100.1"));
  EXPECT_EQ(ntohs(ck.client_port), 40000);
  EXPECT_EQ(ntohs(ck.server_port), 3478);
  EXPECT_EQ(ntohs(ck.channel), 0x4001);
  EXPECT_EQ(std::vector<uint8_t>(cv.relay_addr, cv.relay_addr + 16), mapped("198.51.100.1"));
  EXPECT_EQ(std::vector<uint8_t>(cv.peer_addr, cv.peer_addr + 16), mapped("10.2.0.9"));
  EXPECT_EQ(ntohs(cv.relay_port), 50000);
  EXPECT_EQ(ntohs(cv.peer_port), 4000);
  EXPECT_EQ(cv.expires_ns, 300'000'000'000ull);
  EXPECT_EQ(cv.counter, 10u);

  const auto& [pk_bytes, pv] = *maps_.peers.begin();
  kturn_peer_key pk;
  std::memcpy(&pk, pk_bytes.data(), sizeof(pk));
  EXPECT_EQ(std::vector<uint8_t>(pk.peer_addr, pk.peer_addr + 16), mapped("10.2.0.9"));
  EXPECT_EQ(ntohs(pk.relay_port), 50000);
  EXPECT_EQ(ntohs(pv.client_port), 40000);
  EXPECT_EQ(ntohs(pv.channel), 0x4001);
  EXPECT_EQ(pv.counter, 11u);
  EXPECT_EQ(offloader.size(), 1u);
}

TEST_F(ChannelOffloaderTest, OfferingAgainMovesTheExpiryAndKeepsTheSlots) {
  ChannelOffloader offloader(maps_, 0, 8);
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(500)));
  ASSERT_EQ(maps_.channels.size(), 1u);
  EXPECT_EQ(maps_.channels.begin()->second.expires_ns, 500'000'000'000ull);
  EXPECT_EQ(maps_.channels.begin()->second.counter, 0u);
  EXPECT_EQ(maps_.peers.begin()->second.expires_ns, 500'000'000'000ull);
}

TEST_F(ChannelOffloaderTest, OfferingAnUnmovedChannelAgainWritesNothing) {
  ChannelOffloader offloader(maps_, 0, 8);
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  maps_.channels.clear();  // would come back if the offer wrote again
  EXPECT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  EXPECT_TRUE(maps_.channels.empty());
}

TEST_F(ChannelOffloaderTest, CollectReportsGrowthOnceAndWithdrawReturnsTheRest) {
  ChannelOffloader offloader(maps_, 0, 8);
  maps_.counters[0] = {5, 500};  // counted before this channel had the slot: not its traffic
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  maps_.counters[0] = {8, 800};
  maps_.counters[1] = {2, 150};
  std::vector<turn::OffloadedTraffic> seen;
  offloader.collect([&](const FiveTuple& ft, uint16_t channel, const turn::OffloadedTraffic& t) {
    EXPECT_EQ(ft, allocation_.five_tuple);
    EXPECT_EQ(channel, 0x4001);
    seen.push_back(t);
  });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].packets_to_peer, 3u);
  EXPECT_EQ(seen[0].bytes_to_peer, 300u);
  EXPECT_EQ(seen[0].packets_to_client, 2u);
  EXPECT_EQ(seen[0].bytes_to_client, 150u);
  offloader.collect([&](const FiveTuple&, uint16_t, const turn::OffloadedTraffic&) {
    ADD_FAILURE() << "nothing grew";
  });

  maps_.counters[1] = {3, 250};
  turn::OffloadedTraffic last = offloader.withdraw(allocation_, channel_);
  EXPECT_EQ(last.packets_to_client, 1u);
  EXPECT_EQ(last.bytes_to_client, 100u);
  EXPECT_TRUE(maps_.channels.empty());
  EXPECT_TRUE(maps_.peers.empty());
  EXPECT_EQ(offloader.size(), 0u);
  // Client-side traffic as it crossed the listener: ChannelData headers included.
  ASSERT_GT(offloader.listenerTraffic().size(), 2u);
  const turn::TrafficCounters& l = offloader.listenerTraffic()[2];
  EXPECT_EQ(l.rx_packets, 3u);
  EXPECT_EQ(l.rx_bytes, 300u + 3 * 4);
  EXPECT_EQ(l.tx_packets, 3u);
  EXPECT_EQ(l.tx_bytes, 250u + 3 * 4);
}

TEST_F(ChannelOffloaderTest, SlotsRunOutAndComeBack) {
  ChannelOffloader offloader(maps_, 20, 4);  // two channels' worth
  turn::ChannelBinding second = channel_, third = channel_;
  second.number = 0x4002;
  second.peer = addr("10.2.0.10:4000");
  third.number = 0x4003;
  third.peer = addr("10.2.0.11:4000");
  ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  ASSERT_TRUE(offloader.offer(allocation_, second, at(300)));
  EXPECT_FALSE(offloader.offer(allocation_, third, at(300)));
  EXPECT_EQ(maps_.channels.size(), 2u);
  (void)offloader.withdraw(allocation_, channel_);
  EXPECT_TRUE(offloader.offer(allocation_, third, at(300)));
}

TEST_F(ChannelOffloaderTest, AMapThatRefusesLeavesNothingBehind) {
  ChannelOffloader offloader(maps_, 0, 8);
  maps_.refuse = true;
  EXPECT_FALSE(offloader.offer(allocation_, channel_, at(300)));
  EXPECT_EQ(offloader.size(), 0u);
  EXPECT_TRUE(maps_.channels.empty());
  EXPECT_EQ(offloader.withdraw(allocation_, channel_).packets_to_peer, 0u);
}

TEST_F(ChannelOffloaderTest, DestroyingTheOffloaderErasesItsEntries) {
  {
    ChannelOffloader offloader(maps_, 0, 8);
    ASSERT_TRUE(offloader.offer(allocation_, channel_, at(300)));
  }
  EXPECT_TRUE(maps_.channels.empty());
  EXPECT_TRUE(maps_.peers.empty());
}

}  // namespace
}  // namespace kturn::worker
