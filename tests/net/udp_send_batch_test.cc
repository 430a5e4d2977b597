#include "net/udp_send_batch.h"

#include <gtest/gtest.h>
#include <netinet/udp.h>
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

// Every datagram waiting on `fd` (at most `n`), in arrival order, each as one string.
std::vector<std::string> receiveAll(int fd, size_t n) {
  std::vector<std::string> got;
  UdpReceiveBatch in(64, 2048);
  while (got.size() < n && waitReadable(fd, std::chrono::milliseconds(500))) {
    const auto count = in.receive(fd);
    if (!count) break;
    for (size_t i = 0; i < *count; ++i) got.emplace_back(textOf(in.payload(i)));
  }
  return got;
}

// Every datagram waiting on `fd` (at most `n`), in arrival order, as its sender's IP address.
std::vector<std::string> sourcesOf(int fd, size_t n) {
  std::vector<std::string> got;
  UdpReceiveBatch in(64, 2048);
  while (got.size() < n && waitReadable(fd, std::chrono::milliseconds(500))) {
    const auto count = in.receive(fd);
    if (!count) break;
    for (size_t i = 0; i < *count; ++i) got.push_back(in.source(i).ip.toString());
  }
  return got;
}

// A socket on the wildcard address of `family` (IPv6 only for IPv6), on an ephemeral port.
UdpSocket bindWildcard(AddressFamily family) {
  const IpAddress any = family == AddressFamily::kIPv4 ? IpAddress{} : *IpAddress::parse("::");
  auto socket = UdpSocket::bind({any, 0}, {});
  EXPECT_TRUE(socket.has_value()) << (socket ? "" : socket.error().message);
  return std::move(*socket);
}

IpAddress ip(const char* text) { return *IpAddress::parse(text); }

// `n` datagrams of `size` bytes, each different (its index in the first byte, then a filler).
std::vector<std::string> datagrams(size_t n, size_t size, char fill = 'x') {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string d(size, fill);
    d[0] = static_cast<char>('A' + i % 26);
    out.push_back(std::move(d));
  }
  return out;
}

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

// UDP GSO: a train to one destination is one message, and the receiver, which has not asked for
// GRO, gets exactly the datagrams that were queued.
TEST(UdpSendBatchGsoTest, ATrainToOneDestinationIsOneMessageAndArrivesAsItsDatagrams) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  std::vector<std::string> sent = datagrams(10, 100);
  sent.push_back("the shorter last one");
  UdpSendBatch batch(64);
  ASSERT_TRUE(batch.gso());
  for (const std::string& d : sent) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  batch.flush();
  EXPECT_EQ(batch.syscalls(), 1u);
  EXPECT_EQ(batch.gsoMessages(), 1u);
  EXPECT_EQ(batch.sent(), sent.size());
  EXPECT_EQ(receiveAll(receiver.fd(), sent.size()), sent);
}

TEST(UdpSendBatchGsoTest, ATrainEndsAtAnotherDestinationALargerDatagramOrAShorterOne) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket a = bindLoopback(AddressFamily::kIPv4);
  UdpSocket b = bindLoopback(AddressFamily::kIPv6);
  UdpSocket sender4 = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender6 = bindLoopback(AddressFamily::kIPv6);
  const TransportAddress a_port_b{a.localAddress().ip,
                                  static_cast<uint16_t>(b.localAddress().port)};
  // To a: 50 50 | 60 50 | 20 | 50 ; then one to the same IP on another port, which must not
  // join; over IPv6 to b: 64 x 10 bytes | 10 (UDP_MAX_SEGMENTS).
  const std::vector<size_t> sizes{50, 50, 60, 50, 20, 50};
  std::vector<std::string> to_a;
  for (size_t i = 0; i < sizes.size(); ++i) to_a.push_back(datagrams(i + 1, sizes[i]).back());
  const std::vector<std::string> to_b = datagrams(65, 10, 'b');
  UdpSendBatch batch(128);
  for (const std::string& d : to_a)
    ASSERT_TRUE(batch.queue(sender4.fd(), a.localAddress(), bytesOf(d)));
  ASSERT_TRUE(batch.queue(sender4.fd(), a_port_b, bytesOf(to_a.back())));
  for (const std::string& d : to_b)
    ASSERT_TRUE(batch.queue(sender6.fd(), b.localAddress(), bytesOf(d)));
  batch.flush();
  EXPECT_EQ(batch.syscalls(), 2u);     // one per fd
  EXPECT_EQ(batch.gsoMessages(), 3u);  // {50 50}, {60 50}, {64 x 10}
  EXPECT_EQ(batch.sent(), to_a.size() + 1 + to_b.size());
  EXPECT_EQ(receiveAll(a.fd(), to_a.size()), to_a);
  EXPECT_EQ(receiveAll(b.fd(), to_b.size()), to_b);
}

TEST(UdpSendBatchGsoTest, ATrainStaysWithinItsByteBudget) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4, {.recv_buffer = 1 << 20});
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  const std::vector<std::string> sent = datagrams(40, 1000);  // 32 fit in 32 KiB, then 8
  UdpSendBatch batch(64);
  for (const std::string& d : sent) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  batch.flush();
  EXPECT_EQ(batch.gsoMessages(), 2u);
  EXPECT_EQ(receiveAll(receiver.fd(), sent.size()), sent);
}

// The kernel refuses GSO on a socket that sends without UDP checksums (as on a device without
// checksum offload): the train goes again one datagram at a time, and nothing is lost.
TEST(UdpSendBatchGsoTest, ATrainTheKernelRefusesGoesDatagramByDatagram) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  const int one = 1;
  ASSERT_EQ(::setsockopt(sender.fd(), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
  const std::vector<std::string> sent = datagrams(8, 200);
  UdpSendBatch batch(16);
  for (const std::string& d : sent) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  batch.flush();
  EXPECT_EQ(batch.gsoFallbacks(), 1u);
  EXPECT_EQ(batch.gsoMessages(), 0u);
  EXPECT_EQ(batch.sent(), sent.size());
  EXPECT_EQ(batch.dropped(), 0u);
  EXPECT_EQ(receiveAll(receiver.fd(), sent.size()), sent);

  // A path that refuses every train: after 16 refusals the batch stops trying.
  for (int round = 1; round < 16; ++round) {
    EXPECT_TRUE(batch.gso());
    for (const std::string& d : sent) {
      ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
    }
    batch.flush();
  }
  EXPECT_FALSE(batch.gso());
  EXPECT_EQ(batch.gsoFallbacks(), 16u);
  for (const std::string& d : sent) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  const uint64_t syscalls = batch.syscalls();
  batch.flush();
  EXPECT_EQ(batch.syscalls(), syscalls + 1);  // no refused train first
  EXPECT_EQ(batch.sent(), 17 * sent.size());
}

TEST(UdpSendBatchGsoTest, WithoutGsoEveryDatagramIsItsOwnMessage) {
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  const std::vector<std::string> sent = datagrams(8, 200);
  UdpSendBatch batch(16, /*gso=*/false);
  EXPECT_FALSE(batch.gso());
  for (const std::string& d : sent) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
  }
  batch.flush();
  EXPECT_EQ(batch.gsoMessages(), 0u);
  EXPECT_EQ(batch.sent(), sent.size());
  EXPECT_EQ(receiveAll(receiver.fd(), sent.size()), sent);
}

// A socket on 0.0.0.0 answers from the address it is given, not the one the kernel's route
// prefers (127.0.0.1 for a loopback destination): the whole of 127.0.0.0/8 is local, so .2 and .3
// stand for the two addresses of a multi-homed host or an Anycast address beside a unicast one.
TEST(UdpSendBatchSourceTest, AWildcardSocketSendsFromTheAddressQueuedWithEachDatagram) {
  for (const bool gso : {false, true}) {
    SCOPED_TRACE(gso ? "with GSO" : "without GSO");
    UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
    UdpSocket sender = bindWildcard(AddressFamily::kIPv4);
    UdpSendBatch batch(16, gso);
    const std::string d = "hello";
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d)));
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d), ip("127.0.0.2")));
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d), ip("127.0.0.3")));
    batch.flush();
    EXPECT_EQ(batch.sent(), 3u);
    EXPECT_EQ(sourcesOf(receiver.fd(), 3),
              (std::vector<std::string>{"127.0.0.1", "127.0.0.2", "127.0.0.3"}));
  }
}

TEST(UdpSendBatchSourceTest, ATrainCarriesOneSourceAndEndsWhereTheSourceChanges) {
  if (!UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  UdpSocket receiver = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindWildcard(AddressFamily::kIPv4);
  const std::vector<std::string> sent = datagrams(8, 100);
  UdpSendBatch batch(16);
  for (size_t i = 0; i < sent.size(); ++i) {
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(sent[i]),
                            ip(i < 4 ? "127.0.0.2" : "127.0.0.3")));
  }
  batch.flush();
  EXPECT_EQ(batch.syscalls(), 1u);
  EXPECT_EQ(batch.gsoMessages(), 2u);  // 4 from .2, 4 from .3
  EXPECT_EQ(batch.sent(), sent.size());
  std::vector<std::string> want(4, "127.0.0.2");
  want.insert(want.end(), 4, "127.0.0.3");
  EXPECT_EQ(sourcesOf(receiver.fd(), sent.size()), want);
}

TEST(UdpSendBatchSourceTest, IPv6SourcesAreSetAndANonLocalSourceIsACountedDrop) {
  for (const AddressFamily family : {AddressFamily::kIPv4, AddressFamily::kIPv6}) {
    const bool v4 = family == AddressFamily::kIPv4;
    SCOPED_TRACE(v4 ? "IPv4" : "IPv6");
    UdpSocket receiver = bindLoopback(family);
    UdpSocket sender = bindWildcard(family);
    UdpSendBatch batch(16, /*gso=*/false);
    const std::string d = "hello";
    // Documentation addresses (RFC 5737, RFC 3849) that no interface here holds: the kernel
    // refuses them as a source, which proves it read the control message.
    const IpAddress foreign = ip(v4 ? "192.0.2.1" : "2001:db8::1");
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d), loopback(family)));
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d), foreign));
    ASSERT_TRUE(batch.queue(sender.fd(), receiver.localAddress(), bytesOf(d), loopback(family)));
    batch.flush();
    EXPECT_EQ(batch.sent(), 2u);
    EXPECT_EQ(batch.dropped(), 1u);
    const std::string here = loopback(family).toString();
    EXPECT_EQ(sourcesOf(receiver.fd(), 2), (std::vector<std::string>{here, here}));
  }
}

}  // namespace
}  // namespace kturn::net
