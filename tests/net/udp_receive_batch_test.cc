#include "net/udp_receive_batch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "net/loopback.h"
#include "net/udp_send_batch.h"

namespace kturn::net {
namespace {

using testing::bindLoopback;
using testing::bytesOf;
using testing::loopback;
using testing::sendTo;
using testing::textOf;
using testing::waitReadable;

// One receive once the socket is readable. Loopback delivers a datagram to the receiving socket
// before sendto() returns, so everything sent beforehand is there.
size_t receiveAll(UdpReceiveBatch& batch, int fd) {
  if (!waitReadable(fd)) return 0;
  auto n = batch.receive(fd);
  EXPECT_TRUE(n) << n.error().message;
  return n ? *n : 0;
}

class UdpReceiveBatchFamilyTest : public ::testing::TestWithParam<AddressFamily> {};

TEST_P(UdpReceiveBatchFamilyTest, ReceivesDatagramsWithTheirSources) {
  UdpSocket receiver = bindLoopback(GetParam());
  UdpSocket a = bindLoopback(GetParam());
  UdpSocket b = bindLoopback(GetParam());
  const std::vector<std::pair<const UdpSocket*, std::string>> sent = {
      {&a, "a0"}, {&b, "b0-longer"}, {&a, "a1"}, {&b, ""}, {&a, std::string(1200, 'x')}};
  for (const auto& [from, text] : sent) {
    ASSERT_TRUE(sendTo(from->fd(), receiver.localAddress(), bytesOf(text)));
  }

  UdpReceiveBatch batch(16, 1500, 48);
  ASSERT_EQ(receiveAll(batch, receiver.fd()), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(textOf(batch.payload(i)), sent[i].second) << i;
    EXPECT_EQ(batch.source(i), sent[i].first->localAddress()) << i;
    EXPECT_FALSE(batch.truncated(i)) << i;
    EXPECT_FALSE(batch.destination(i)) << "packet_info is off";
  }
}

TEST_P(UdpReceiveBatchFamilyTest, PacketInfoReportsTheDestination) {
  UdpSocket receiver = bindLoopback(GetParam(), {.packet_info = true});
  UdpSocket sender = bindLoopback(GetParam());
  ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf("hello")));
  UdpReceiveBatch batch(4, 64);
  ASSERT_EQ(receiveAll(batch, receiver.fd()), 1u);
  EXPECT_EQ(batch.destination(0), loopback(GetParam()));
}

TEST_P(UdpReceiveBatchFamilyTest, BatchSmallerThanQueueTakesTheRestNextTime) {
  UdpSocket receiver = bindLoopback(GetParam());
  UdpSocket sender = bindLoopback(GetParam());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf(std::to_string(i))));
  }
  UdpReceiveBatch batch(3, 64);
  ASSERT_EQ(receiveAll(batch, receiver.fd()), 3u);
  EXPECT_EQ(textOf(batch.payload(2)), "2");
  ASSERT_EQ(receiveAll(batch, receiver.fd()), 2u);
  EXPECT_EQ(textOf(batch.payload(0)), "3");
  EXPECT_EQ(textOf(batch.payload(1)), "4");
  auto none = batch.receive(receiver.fd());
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(batch.size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Loopback, UdpReceiveBatchFamilyTest,
                         ::testing::Values(AddressFamily::kIPv4, AddressFamily::kIPv6),
                         [](const auto& info) {
                           return info.param == AddressFamily::kIPv4 ? "IPv4" : "IPv6";
                         });

TEST(UdpReceiveBatchTest, DualStackSocketReportsMappedAddresses) {
  auto receiver = UdpSocket::bind(*TransportAddress::parse("[::]:0"),
                                  {.ipv6_only = false, .packet_info = true});
  ASSERT_TRUE(receiver) << receiver.error().message;
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  ASSERT_TRUE(sendTo(sender.fd(), {loopback(AddressFamily::kIPv4), receiver->localAddress().port},
                     bytesOf("v4")));
  UdpReceiveBatch batch(4, 64);
  ASSERT_EQ(receiveAll(batch, receiver->fd()), 1u);
  // Exact, not "helpful": the peer is what the kernel reported, so replies go back the same way.
  const TransportAddress mapped{*IpAddress::parse("::ffff:127.0.0.1"), sender.localAddress().port};
  EXPECT_EQ(batch.source(0), mapped);
  EXPECT_EQ(batch.destination(0), IpAddress::parse("::ffff:127.0.0.1"));
}

TEST(UdpReceiveBatchTest, EmptySocketReturnsZero) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpReceiveBatch batch(4, 64);
  auto n = batch.receive(receiver.fd());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 0u);
}

TEST(UdpReceiveBatchTest, BadDescriptorIsAnError) {
  UdpReceiveBatch batch(4, 64);
  auto n = batch.receive(-1);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, Error::Code::kIo);
}

TEST(UdpReceiveBatchTest, OversizeDatagramIsFlaggedTruncated) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  const std::string big(40, 'B');
  ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf(big)));
  ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf("small")));
  UdpReceiveBatch batch(4, 16);
  ASSERT_EQ(receiveAll(batch, receiver.fd()), 2u);
  EXPECT_TRUE(batch.truncated(0));
  EXPECT_EQ(batch.payload(0).size(), 16u);
  EXPECT_EQ(textOf(batch.payload(0)), big.substr(0, 16));
  EXPECT_FALSE(batch.truncated(1));
  EXPECT_EQ(textOf(batch.payload(1)), "small");
}

// UDP GRO: a socket that asked for it gets a local sender's GSO train as one payload, with the
// size of its datagrams; a lone datagram still comes alone.
TEST(UdpReceiveBatchTest, AGroSocketGetsATrainAsOnePayloadWithItsSegmentSize) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4, {.gro = true});
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  std::vector<std::string> train;
  for (int i = 0; i < 10; ++i) train.push_back(std::string(100, static_cast<char>('a' + i)));
  train.push_back("shorter last");
  UdpSendBatch batch(16);
  for (const std::string& d : train) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  batch.flush();
  ASSERT_EQ(batch.gsoMessages(), 1u);
  ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf("alone")));

  UdpReceiveBatch in(8, 65535);
  std::vector<std::string> got;
  std::vector<size_t> segments;
  while (got.size() < 2 && waitReadable(receiver.fd())) {
    const auto n = in.receive(receiver.fd());
    ASSERT_TRUE(n);
    for (size_t i = 0; i < *n; ++i) {
      got.emplace_back(textOf(in.payload(i)));
      segments.push_back(in.segmentSize(i));
      EXPECT_EQ(in.source(i), sender.localAddress());
    }
  }
  std::string joined;
  for (const std::string& d : train) joined += d;
  EXPECT_EQ(got, (std::vector<std::string>{joined, "alone"}));
  EXPECT_EQ(segments, (std::vector<size_t>{100, 0}));
}

// Without UDP_GRO the same train arrives as its datagrams, none with a segment size.
TEST(UdpReceiveBatchTest, WithoutGroATrainArrivesAsItsDatagrams) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  UdpSendBatch batch(16);
  const std::string d(100, 'z');
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  batch.flush();
  UdpReceiveBatch in(8, 65535);
  size_t got = 0;
  while (got < 5 && waitReadable(receiver.fd())) {
    const auto n = in.receive(receiver.fd());
    ASSERT_TRUE(n);
    for (size_t i = 0; i < *n; ++i, ++got) {
      EXPECT_EQ(in.payload(i).size(), 100u);
      EXPECT_EQ(in.segmentSize(i), 0u);
    }
  }
  EXPECT_EQ(got, 5u);
}

TEST(UdpReceiveBatchTest, HeadroomIsRoundedAndAligned) {
  EXPECT_EQ(UdpReceiveBatch(2, 100, 0).headroom(), UdpReceiveBatch::kMinHeadroom);
  EXPECT_EQ(UdpReceiveBatch(2, 100, 50).headroom(), 56u);
  EXPECT_EQ(UdpReceiveBatch(2, 100, 64).headroom(), 64u);

  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  // An odd max_payload must not break the alignment of the next slot.
  UdpReceiveBatch batch(4, 1001, 49);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sendTo(sender.fd(), receiver.localAddress(), bytesOf("abc")));
  }
  ASSERT_EQ(receiveAll(batch, receiver.fd()), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto whole = batch.withHeadroom(i);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(whole.data()) % 8, 0u) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(batch.payload(i).data()) % 8, 0u) << i;
    EXPECT_EQ(whole.size(), batch.headroom() + 3);
    EXPECT_EQ(whole.data() + batch.headroom(), batch.payload(i).data());
  }
}

TEST(UdpReceiveBatchTest, FramingWrittenInPlaceIsSent) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket relay = bindLoopback(AddressFamily::kIPv4);
  UdpSocket peer = bindLoopback(AddressFamily::kIPv4);
  ASSERT_TRUE(sendTo(peer.fd(), relay.localAddress(), bytesOf("payload")));

  UdpReceiveBatch in(4, 1500);
  ASSERT_EQ(receiveAll(in, relay.fd()), 1u);
  // A ChannelData-like header in front, STUN-style padding behind: no copy of the payload.
  const auto framed = in.expand(0, 4, 1);
  ASSERT_EQ(framed.size(), 4 + 7 + 1u);
  std::memcpy(framed.data(), "HDR:", 4);
  framed.back() = '.';
  ASSERT_TRUE(sendTo(relay.fd(), receiver.localAddress(), framed));
  // Same through withHeadroom: the whole headroom may be written.
  const auto whole = in.withHeadroom(0);
  std::memset(whole.data(), 'h', in.headroom());
  ASSERT_TRUE(sendTo(relay.fd(), receiver.localAddress(), whole));

  UdpReceiveBatch out(4, 1500);
  ASSERT_EQ(receiveAll(out, receiver.fd()), 2u);
  EXPECT_EQ(textOf(out.payload(0)), "HDR:payload.");
  EXPECT_EQ(textOf(out.payload(1)), std::string(in.headroom(), 'h') + "payload");
  EXPECT_EQ(out.source(0), relay.localAddress());
}

}  // namespace
}  // namespace kturn::net
