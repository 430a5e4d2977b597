// SourceBlockList against a fake of the kernel's maps: the drop-list entry it writes for a
// source the TURN core's throttle caught, and what it leaves alone.
#include "worker/source_block_list.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "worker/fake_offload_maps.h"

namespace kturn::worker {
namespace {

using testing::FakeMaps;

FiveTuple tuple(const char* client, const char* server,
                TransportProtocol protocol = TransportProtocol::kUdp) {
  return {protocol, *TransportAddress::parse(client), *TransportAddress::parse(server)};
}

turn::MonoTime at(int64_t ns) { return turn::MonoTime(std::chrono::nanoseconds(ns)); }

TEST(SourceBlockListTest, WritesTheSourceTheListenerPortAndTheExpiry) {
  FakeMaps maps;
  SourceBlockList list(maps);
  EXPECT_TRUE(list.block(1, tuple("192.0.2.7:40000", "10.0.0.1:3478"), at(5'000'000'000)));
  ASSERT_EQ(maps.blocks.size(), 1u);
  kturn_block_key key;
  std::memcpy(&key, maps.blocks.begin()->first.data(), sizeof(key));
  const uint8_t v4_mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
  EXPECT_EQ(std::memcmp(key.addr, v4_mapped, 16), 0);
  EXPECT_EQ(ntohs(key.port), 3478);  // the listener's port, not the client's
  EXPECT_EQ(key.pad, 0);
  EXPECT_EQ(key.pad2, 0u);
  EXPECT_EQ(maps.blocks.begin()->second.expires_ns, 5'000'000'000u);
  EXPECT_EQ(maps.blocks.begin()->second.dropped, 0u);
  EXPECT_EQ(list.written(), 1u);
}

TEST(SourceBlockListTest, AnIPv6SourceIsKeptAsIs) {
  FakeMaps maps;
  SourceBlockList list(maps);
  EXPECT_TRUE(list.block(1, tuple("[2001:db8::7]:40000", "[2001:db8::1]:3478"), at(1)));
  ASSERT_EQ(maps.blocks.size(), 1u);
  kturn_block_key key;
  std::memcpy(&key, maps.blocks.begin()->first.data(), sizeof(key));
  EXPECT_EQ(key.addr[0], 0x20);
  EXPECT_EQ(key.addr[1], 0x01);
  EXPECT_EQ(key.addr[15], 0x07);
}

TEST(SourceBlockListTest, TcpSourcesAreLeftToTheThrottle) {
  FakeMaps maps;
  SourceBlockList list(maps);
  EXPECT_FALSE(
      list.block(1, tuple("192.0.2.7:40000", "10.0.0.1:3478", TransportProtocol::kTcp), at(1)));
  EXPECT_TRUE(maps.blocks.empty());
  EXPECT_EQ(list.written(), 0u);
}

TEST(SourceBlockListTest, ARefusedWriteIsCounted) {
  FakeMaps maps;
  maps.refuse = true;
  SourceBlockList list(maps);
  EXPECT_FALSE(list.block(1, tuple("192.0.2.7:40000", "10.0.0.1:3478"), at(1)));
  EXPECT_EQ(list.refused(), 1u);
}

}  // namespace
}  // namespace kturn::worker
