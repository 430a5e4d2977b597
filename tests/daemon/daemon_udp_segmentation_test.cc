// UDP GSO and GRO through a running kturnd. A client's train of equal-sized Send indications
// reaches the TURN-UDP listener as one payload (GRO), is relayed datagram by datagram, and what
// goes to the peer leaves as a train again (GSO); a peer's train reaches the relay as one and
// goes to the client as Data indications, each framed in a copy of its own. With
// udp_segmentation off (kturnd --no-udp-segmentation) the same datagrams go one by one. Either
// way the other side gets exactly what was sent, in order.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/udp_send_batch.h"
#include "net/udp_socket.h"
#include "stun/attributes.h"
#include "stun/message_builder.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

class DaemonUdpSegmentationTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    const uint16_t port = testing::freeUdpPort();
    ASSERT_NE(port, 0);
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-udp-segmentation-test-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << "version: v1\n"
                            "admin: {name: t, healthcheck_endpoint: \"\"}\n"
                            "auth: {type: static, realm: kturn.test, "
                            "credentials: {username: u, password: p}}\n"
                            "listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, "
                         << "port: " << port << ", routes: [c]}]\n"
                         << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
    daemon_ = testing::startDaemonOn(path_, 1, /*udp_segmentation=*/GetParam());
    ASSERT_TRUE(daemon_);
    server_ = TransportAddress{IpAddress::v4(0x7F000001), port};
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
  TransportAddress server_;
};

TEST_P(DaemonUdpSegmentationTest, ATrainOfSendIndicationsIsRelayedDatagramByDatagram) {
  if (!net::UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  auto peer = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  ASSERT_TRUE(peer);
  testing::TurnTestClient client(server_, "u", "p");
  ASSERT_TRUE(client.allocate().success);
  ASSERT_TRUE(client.createPermission(peer->localAddress()).success);

  // 16 Send indications of one size, sent as one GSO message from the client's socket.
  constexpr size_t kCount = 16;
  std::vector<std::vector<uint8_t>> messages;
  std::vector<std::string> payloads;
  for (size_t i = 0; i < kCount; ++i) {
    payloads.push_back(std::string(200, static_cast<char>('a' + i)));
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(0xA0 + i);
    uint8_t buf[512];
    stun::MessageBuilder b(buf, stun::Method::kSend, stun::MessageClass::kIndication, txid);
    b.addXorAddress(stun::attr::kXorPeerAddress, peer->localAddress());
    b.add(stun::attr::kData, {reinterpret_cast<const uint8_t*>(payloads[i].data()), 200});
    const auto bytes = *b.finish();
    messages.emplace_back(bytes.begin(), bytes.end());
  }
  net::UdpSendBatch train(kCount);
  for (const auto& m : messages) ASSERT_TRUE(train.queue(client.fd(), server_, m));
  train.flush();
  ASSERT_EQ(train.gsoMessages(), 1u);

  std::vector<std::string> got;
  uint8_t buf[2048];
  while (got.size() < kCount) {
    pollfd p{peer->fd(), POLLIN, 0};
    if (::poll(&p, 1, 2000) != 1) break;
    const ssize_t n = ::recv(peer->fd(), buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.emplace_back(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  EXPECT_EQ(got, payloads);

  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_EQ(stats.turn.client_packets_relayed, kCount);
  if (GetParam()) {
    EXPECT_EQ(stats.receive_gro_trains, 1u);  // the 16 arrived as one
    EXPECT_GE(stats.send_gso_trains, 1u);     // and left toward the peer as a train
  } else {
    EXPECT_EQ(stats.receive_gro_trains, 0u);
    EXPECT_EQ(stats.send_gso_trains, 0u);
  }
}

TEST_P(DaemonUdpSegmentationTest, APeersTrainReachesTheClientAsItsDatagrams) {
  if (!net::UdpSendBatch::gsoSupported()) GTEST_SKIP() << "this kernel has no UDP GSO";
  auto peer = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  ASSERT_TRUE(peer);
  testing::TurnTestClient client(server_, "u", "p");
  const auto allocated = client.allocate();
  ASSERT_TRUE(allocated.success && allocated.relayed);
  ASSERT_TRUE(client.createPermission(peer->localAddress()).success);

  // 20 datagrams of 300 bytes and a shorter last one: one GSO message from the peer.
  std::vector<std::string> payloads;
  for (int i = 0; i < 20; ++i) payloads.push_back(std::string(300, static_cast<char>('A' + i)));
  payloads.push_back("the last, shorter");
  const uint64_t received_before = daemon_->collectStats().datagrams_received;
  net::UdpSendBatch train(32);
  for (const std::string& p : payloads) {
    ASSERT_TRUE(train.queue(peer->fd(), *allocated.relayed,
                            {reinterpret_cast<const uint8_t*>(p.data()), p.size()}));
  }
  train.flush();
  ASSERT_EQ(train.gsoMessages(), 1u);

  std::vector<std::string> got;
  while (got.size() < payloads.size()) {
    const auto data = client.receiveData(std::chrono::seconds(2));
    if (!data) break;
    EXPECT_EQ(data->first, peer->localAddress());
    got.emplace_back(data->second.begin(), data->second.end());
  }
  EXPECT_EQ(got, payloads);
  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_EQ(stats.turn.peer_packets_relayed, payloads.size());
  EXPECT_EQ(stats.receive_gro_trains, GetParam() ? 1u : 0u);
  // kturn_udp_datagrams_total{outcome="received"} counts each datagram of the train.
  EXPECT_EQ(stats.datagrams_received - received_before, payloads.size());
}

INSTANTIATE_TEST_SUITE_P(Segmentation, DaemonUdpSegmentationTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "On" : "Off";
                         });

}  // namespace
}  // namespace kturn::daemon
