// kturnd's daemon over real loopback sockets: garbage from a client is counted and dropped, and
// valid requests from the same socket are still answered.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/sockaddr.h"
#include "net/udp_socket.h"
#include "stun/attributes.h"
#include "stun/message_builder.h"
#include "support/turn_request.h"

namespace kturn::daemon {
namespace {

uint16_t freeUdpPort() {
  auto s = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  return s ? s->localAddress().port : 0;
}

class DaemonSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = freeUdpPort();
    ASSERT_NE(port_, 0);
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-socket-test-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << "version: v1\n"
                            "admin: {name: t, healthcheck_endpoint: \"\"}\n"
                            "auth: {type: static, realm: kturn.test, "
                            "credentials: {username: u, password: p}}\n"
                            "listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, "
                         << "port: " << port_ << ", routes: [c]}]\n"
                         << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
    daemon_ = testing::startDaemonOn(path_);
    ASSERT_TRUE(daemon_);
    auto client = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
    ASSERT_TRUE(client);
    client_ = std::move(*client);
    server_ = TransportAddress{*IpAddress::parse("127.0.0.1"), port_};
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  void send(std::span<const uint8_t> bytes) {
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(server_, ss);
    ASSERT_GE(::sendto(client_.fd(), bytes.data(), bytes.size(), 0,
                       reinterpret_cast<sockaddr*>(&ss), len),
              0);
  }

  // Waits up to 2 s for a STUN message with `txid`, skipping anything else.
  std::optional<std::vector<uint8_t>> receive(const stun::TransactionId& txid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{client_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      std::vector<uint8_t> buf(2048);
      const ssize_t n = ::recv(client_.fd(), buf.data(), buf.size(), 0);
      if (n <= 0) continue;
      buf.resize(static_cast<size_t>(n));
      auto m = stun::MessageView::parse(buf);
      if (m && std::equal(txid.begin(), txid.end(), m->transactionId().begin())) return buf;
    }
    return std::nullopt;
  }

  void drain() {
    uint8_t buf[2048];
    while (::recv(client_.fd(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }

  std::vector<uint8_t> request(stun::Method method, const stun::TransactionId& txid) {
    return *::kturn::testing::buildRequest(
        {.method = method, .transaction_id = txid, .fill = [method](stun::MessageBuilder& b) {
           if (method == stun::Method::kAllocate) {
             const uint8_t udp[] = {17, 0, 0, 0};
             b.add(stun::attr::kRequestedTransport, udp);
           }
         }});
  }

  uint16_t port_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
  net::UdpSocket client_;
  TransportAddress server_;
};

TEST_F(DaemonSocketTest, GarbageIsDroppedAndValidRequestsOnTheSameSocketAreAnswered) {
  std::mt19937 rng(7);
  const stun::TransactionId probe_id = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  const auto valid = request(stun::Method::kBinding, probe_id);
  uint64_t sent = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> d;
    if (i % 3 == 0) {
      d.resize(1 + rng() % 1400);
      for (auto& b : d) b = static_cast<uint8_t>(rng());
    } else if (i % 3 == 1) {
      d.assign(valid.begin(), valid.begin() + rng() % valid.size());  // truncated
    } else {
      d = valid;
      d[rng() % d.size()] ^= static_cast<uint8_t>(1 + rng() % 255);  // corrupted
    }
    if (d.empty()) continue;
    send(d);
    ++sent;
    drain();  // answers to the garbage (400s) must not fill the client's receive buffer
  }

  const stun::TransactionId binding_id = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  send(request(stun::Method::kBinding, binding_id));
  auto binding = receive(binding_id);
  ASSERT_TRUE(binding) << "no Binding response after the garbage";
  auto m = stun::MessageView::parse(*binding);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->messageClass(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(stun::decodeXorAddress(*m->value(stun::attr::kXorMappedAddress), m->xorPad()),
            client_.localAddress());

  const stun::TransactionId allocate_id = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  send(request(stun::Method::kAllocate, allocate_id));
  auto challenge = receive(allocate_id);
  ASSERT_TRUE(challenge);
  auto c = stun::MessageView::parse(*challenge);
  ASSERT_TRUE(c);
  EXPECT_EQ(stun::decodeErrorCode(*c->value(stun::attr::kErrorCode))->code, 401);

  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_GT(stats.turn.drop_malformed + stats.turn.drop_not_turn, 0u);
  // The workers saw the garbage (the kernel may drop some under CI load; it never invents any).
  EXPECT_LE(stats.datagrams_received, sent + 2);
  EXPECT_GE(stats.datagrams_received, sent / 2);
}

}  // namespace
}  // namespace kturn::daemon
