// RawUdpSender on loopback: datagrams from transport addresses that no socket is bound to reach
// an ordinary UDP socket, with the source port and payload as queued; the kernel's receive path
// verifies the checksum written here (a wrong one is dropped and counted in InCsumErrors).
#include "net/raw_udp_sender.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "net/sockaddr.h"
#include "net/udp_socket.h"

namespace kturn::net {
namespace {

TransportAddress at(const char* ip, uint16_t port) { return {*IpAddress::parse(ip), port}; }

std::vector<uint8_t> payload(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 13);
  return b;
}

struct Datagram {
  TransportAddress from;
  std::vector<uint8_t> data;
};

std::vector<Datagram> receiveAll(int fd) {
  std::vector<Datagram> out;
  for (;;) {
    uint8_t buf[2048];
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const ssize_t n = ::recvfrom(fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&ss), &len);
    if (n < 0) return out;
    out.push_back(
        {fromSockaddr(reinterpret_cast<sockaddr*>(&ss)), std::vector<uint8_t>(buf, buf + n)});
  }
}

// UDP InCsumErrors (IPv4 in /proc/net/snmp, IPv6 in /proc/net/snmp6): what the kernel dropped
// for a bad checksum.
uint64_t checksumErrors(bool v4) {
  if (v4) {
    std::ifstream f("/proc/net/snmp");
    std::string header, values, line;
    while (std::getline(f, line)) {
      if (line.rfind("Udp:", 0) != 0) continue;
      if (header.empty()) {
        header = line;
      } else {
        values = line;
      }
    }
    std::istringstream h(header), v(values);
    std::string name, value;
    while (h >> name && v >> value) {
      if (name == "InCsumErrors") return std::stoull(value);
    }
    return 0;
  }
  std::ifstream f("/proc/net/snmp6");
  std::string name;
  uint64_t value = 0;
  while (f >> name >> value) {
    if (name == "Udp6InCsumErrors") return value;
  }
  return 0;
}

class RawUdpSenderTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto opened = RawUdpSender::open(64);
    if (!opened && opened.error().code == Error::Code::kUnsupported) {
      GTEST_SKIP() << opened.error().message;
    }
    ASSERT_TRUE(opened) << opened.error().message;
    sender_.emplace(std::move(*opened));
    auto bound = UdpSocket::bind(at(GetParam(), 0), {});
    ASSERT_TRUE(bound) << bound.error().message;
    receiver_.emplace(std::move(*bound));
    timeval tv{.tv_sec = 0, .tv_usec = 300'000};
    ::setsockopt(receiver_->fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool v4() const { return IpAddress::parse(GetParam())->isV4(); }

  std::optional<RawUdpSender> sender_;
  std::optional<UdpSocket> receiver_;
};

TEST_P(RawUdpSenderTest, DatagramsFromUnboundPortsArriveWithTheirSourceAndPayload) {
  const uint64_t errors_before = checksumErrors(v4());
  std::vector<std::vector<uint8_t>> sent;
  for (size_t size : {0u, 1u, 2u, 3u, 100u, 101u, 1199u, 1400u}) sent.push_back(payload(size, 7));
  for (size_t k = 0; k < sent.size(); ++k) {
    ASSERT_TRUE(sender_->queue(at(GetParam(), static_cast<uint16_t>(45000 + k)),
                               receiver_->localAddress(), sent[k]));
  }
  sender_->flush();
  const auto got = receiveAll(receiver_->fd());
  ASSERT_EQ(got.size(), sent.size());
  for (size_t k = 0; k < sent.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(got[k].from, at(GetParam(), static_cast<uint16_t>(45000 + k)));
    EXPECT_EQ(got[k].data, sent[k]);
  }
  EXPECT_EQ(sender_->sent(), sent.size());
  EXPECT_EQ(sender_->dropped(), 0u);
  EXPECT_EQ(checksumErrors(v4()), errors_before) << "the kernel found a bad UDP checksum";
}

TEST_P(RawUdpSenderTest, AFullBatchRefusesAndFlushingEmptiesIt) {
  const auto data = payload(40, 1);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(sender_->queue(at(GetParam(), 46000), receiver_->localAddress(), data));
  }
  EXPECT_TRUE(sender_->full());
  EXPECT_FALSE(sender_->queue(at(GetParam(), 46000), receiver_->localAddress(), data));
  sender_->flush();
  EXPECT_TRUE(sender_->empty());
  EXPECT_EQ(receiveAll(receiver_->fd()).size(), 64u);
  EXPECT_LE(sender_->syscalls(), 2u);  // one sendmmsg for the family (two at most)
}

TEST_P(RawUdpSenderTest, ADatagramNoPacketCanCarryIsACountedDrop) {
  const auto other = v4() ? at("::1", 5000) : at("127.0.0.1", 5000);
  EXPECT_TRUE(sender_->queue(at(GetParam(), 46100), other, payload(10, 2)));
  EXPECT_TRUE(sender_->empty());
  EXPECT_EQ(sender_->dropped(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Families, RawUdpSenderTest, ::testing::Values("127.0.0.1", "::1"),
                         [](const auto& info) {
                           return std::string(info.param[0] == ':' ? "IPv6" : "IPv4");
                         });

// RFC 1071's arithmetic against a sum worked by hand: 127.0.0.1:1 -> 127.0.0.1:2, payload
// "ab". Pseudo-header 7f00+0001+7f00+0001+0011+000a, header 0001+0002+000a+0000, data 6162:
// 0x15f8c folds to 0x5f8d, complemented 0xa072.
TEST(UdpChecksumTest, MatchesASumWorkedByHand) {
  const uint8_t header[8] = {0, 1, 0, 2, 0, 10, 0, 0};
  const uint8_t data[2] = {'a', 'b'};
  EXPECT_EQ(udpChecksum(at("127.0.0.1", 1), at("127.0.0.1", 2), header, data), 0xa072);
}

}  // namespace
}  // namespace kturn::net
