#include "net/udp_send_batch.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "net/loopback.h"
#include "net/udp_receive_batch.h"

namespace kturn::net {
namespace {

using testing::bindLoopback;
using testing::bytesOf;
using testing::loopback;
using testing::textOf;
using testing::waitReadable;

TEST(UdpSendBatchTest, OneSyscallPerRunOfTheSameFd) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket a = bindLoopback(AddressFamily::kIPv4);
  UdpSocket b = bindLoopback(AddressFamily::kIPv4);
  std::vector<std::string> payloads;
  for (int i = 0; i < 20; ++i) payloads.push_back("msg-" + std::to_string(i));

  UdpSendBatch batch(64);
  for (int i = 0; i < 20; ++i) {
    const UdpSocket& from = i < 10 ? a : b;
    ASSERT_TRUE(batch.queue(from.fd(), receiver.localAddress(), bytesOf(payloads[i])));
  }
  EXPECT_EQ(batch.size(), 20u);
  batch.flush();
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(batch.sent(), 20u);
  EXPECT_EQ(batch.dropped(), 0u);
  EXPECT_EQ(batch.syscalls(), 2u);

  ASSERT_TRUE(waitReadable(receiver.fd()));
  UdpReceiveBatch in(32, 64);
  auto n = in.receive(receiver.fd());
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_EQ(*n, 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(textOf(in.payload(i)), payloads[i]);
    EXPECT_EQ(in.source(i), (i < 10 ? a : b).localAddress());
  }
}

TEST(UdpSendBatchTest, InterleavedFdsAreGroupedWithOrderKeptPerFd) {
  UdpSocket receiver4 = bindLoopback(AddressFamily::kIPv4);
  UdpSocket receiver6 = bindLoopback(AddressFamily::kIPv6);
  UdpSocket a = bindLoopback(AddressFamily::kIPv4);
  UdpSocket b = bindLoopback(AddressFamily::kIPv6);

  UdpSendBatch batch(8);
  ASSERT_TRUE(batch.queue(a.fd(), receiver4.localAddress(), bytesOf("1")));
  ASSERT_TRUE(batch.queue(b.fd(), receiver6.localAddress(), bytesOf("2")));
  ASSERT_TRUE(batch.queue(b.fd(), receiver6.localAddress(), bytesOf("3")));
  ASSERT_TRUE(batch.queue(a.fd(), receiver4.localAddress(), bytesOf("4")));
  batch.flush();
  EXPECT_EQ(batch.sent(), 4u);
  EXPECT_EQ(batch.syscalls(), 2u);  // a's "1" and "4" go together

  UdpReceiveBatch in(8, 16);
  ASSERT_TRUE(waitReadable(receiver4.fd()));
  ASSERT_EQ(*in.receive(receiver4.fd()), 2u);
  EXPECT_EQ(textOf(in.payload(0)), "1");
  EXPECT_EQ(textOf(in.payload(1)), "4");
  ASSERT_TRUE(waitReadable(receiver6.fd()));
  ASSERT_EQ(*in.receive(receiver6.fd()), 2u);
  EXPECT_EQ(textOf(in.payload(0)), "2");
  EXPECT_EQ(in.source(1), b.localAddress());
}

TEST(UdpSendBatchTest, RoundRobinOverManyFdsCostsOneSyscallPerFdAndSlotsAreReusable) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  std::vector<UdpSocket> senders;
  for (int i = 0; i < 3; ++i) senders.push_back(bindLoopback(AddressFamily::kIPv4));
  std::vector<std::string> payloads;
  for (int i = 0; i < 30; ++i) payloads.push_back(std::string(1 + i % 7, char('a' + i % 3)));

  UdpSendBatch batch(32);
  for (int round = 0; round < 2; ++round) {  // the second round reuses reordered slots
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(batch.queue(senders[i % 3].fd(), receiver.localAddress(), bytesOf(payloads[i])));
    }
    batch.flush();
    EXPECT_EQ(batch.syscalls(), 3u * (round + 1));
  }
  EXPECT_EQ(batch.sent(), 60u);

  // Per sender, in queue order: its payloads are the ones with i % 3 == its index.
  std::vector<std::vector<std::string>> got(3);
  UdpReceiveBatch in(64, 16);
  size_t total = 0;
  while (total < 60 && waitReadable(receiver.fd())) {
    auto n = in.receive(receiver.fd());
    ASSERT_TRUE(n) << n.error().message;
    for (size_t k = 0; k < *n; ++k) {
      for (int s = 0; s < 3; ++s) {
        if (in.source(k) == senders[s].localAddress()) {
          got[s].emplace_back(textOf(in.payload(k)));
        }
      }
    }
    total += *n;
  }
  ASSERT_EQ(total, 60u);
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(got[s].size(), 20u);
    for (size_t k = 0; k < 20; ++k) EXPECT_EQ(got[s][k], payloads[(k % 10) * 3 + s]);
  }
}

TEST(UdpSendBatchTest, QueueRefusesWhenFull) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  UdpSendBatch batch(2);
  EXPECT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("a")));
  EXPECT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("b")));
  EXPECT_FALSE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("c")));
  EXPECT_EQ(batch.size(), 2u);
  batch.flush();
  EXPECT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("c")));
  batch.flush();
  EXPECT_EQ(batch.sent(), 3u);
}

TEST(UdpSendBatchTest, FailedDatagramIsDroppedAndTheRestStillGo) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  const std::vector<uint8_t> too_big(70000, 0);  // over UDP's 65507-byte limit: EMSGSIZE
  const TransportAddress v6_peer{loopback(AddressFamily::kIPv6), receiver.localAddress().port};

  UdpSendBatch batch(8);
  ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("first")));
  ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), too_big));
  ASSERT_TRUE(batch.queue(sender.fd(), v6_peer, bytesOf("wrong family")));  // EAFNOSUPPORT
  ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf("last")));
  batch.flush();
  EXPECT_EQ(batch.sent(), 2u);
  EXPECT_EQ(batch.dropped(), 2u);
  EXPECT_LE(batch.syscalls(), 4u);

  ASSERT_TRUE(waitReadable(receiver.fd()));
  UdpReceiveBatch in(8, 64);
  ASSERT_EQ(*in.receive(receiver.fd()), 2u);
  EXPECT_EQ(textOf(in.payload(0)), "first");
  EXPECT_EQ(textOf(in.payload(1)), "last");
}

TEST(UdpSendBatchTest, FlushNeverBlocksWithATinySendBuffer) {
  // Nobody reads the receiver and both buffers are as small as the kernel allows: whatever does
  // not fit is dropped, and flush returns promptly.
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4, {.recv_buffer = 1});
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4, {.send_buffer = 1});
  const std::vector<uint8_t> datagram(1400, 0x5a);
  UdpSendBatch batch(256);
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 256; ++i) {
      ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), datagram));
    }
    batch.flush();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(batch.sent() + batch.dropped(), 8u * 256u);
  EXPECT_TRUE(batch.empty());
}

TEST(UdpSendBatchTest, ConnectionRefusedDoesNotStopTheBatch) {
  // A connected UDP socket learns of ICMP port-unreachable and fails its next send with
  // ECONNREFUSED. Inside sendmmsg that cuts the call short (the kernel returns the count sent and
  // forgets the error), so the batch goes on from the datagram that failed: everything is
  // accounted for, each call makes progress, nothing blocks.
  TransportAddress closed;
  {
    UdpSocket gone = bindLoopback(AddressFamily::kIPv4);
    closed = gone.localAddress();
  }
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(closed, ss);
  ASSERT_EQ(::connect(sender.fd(), reinterpret_cast<const sockaddr*>(&ss), len), 0);

  constexpr int kCount = 6;
  UdpSendBatch batch(kCount);
  for (int i = 0; i < kCount; ++i) ASSERT_TRUE(batch.queue(sender.fd(), closed, bytesOf("ping")));
  batch.flush();
  EXPECT_EQ(batch.sent() + batch.dropped(), static_cast<uint64_t>(kCount));
  EXPECT_GE(batch.sent(), 1u);
  EXPECT_LE(batch.syscalls(), static_cast<uint64_t>(kCount));
}

TEST(UdpSendBatchTest, BadDescriptorDropsWithoutSpinning) {
  UdpSendBatch batch(4);
  const TransportAddress to{loopback(AddressFamily::kIPv4), 9};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(batch.queue(-1, to, bytesOf("x")));
  batch.flush();
  EXPECT_EQ(batch.sent(), 0u);
  EXPECT_EQ(batch.dropped(), 4u);
  EXPECT_EQ(batch.syscalls(), 1u);
}

}  // namespace
}  // namespace kturn::net
