// RFC 6062 TCP allocations through the whole daemon over loopback: a client allocates a TCP
// relay over TURN-TCP, connects it to a TCP echo peer and exchanges bytes over a data connection
// bound with ConnectionBind (whichever of the two workers the data connection lands on); a peer
// with a permission connecting to the relay is offered with a ConnectionAttempt; peers outside
// every TCP cluster are refused.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/sockaddr.h"
#include "net/tcp_socket.h"
#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "support/turn_request.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using Bytes = std::vector<uint8_t>;

int connectTo(const TransportAddress& to) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{3, 0};  // every read in these tests is bounded
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_storage ss;
  const socklen_t len = net::toSockaddr(to, ss);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sendAll(int fd, std::span<const uint8_t> bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Exactly `n` bytes, or fewer on EOF or after the 3 s receive timeout.
Bytes readExactly(int fd, size_t n) {
  Bytes got(n);
  size_t have = 0;
  while (have < n) {
    const ssize_t r = ::recv(fd, got.data() + have, n - have, 0);
    if (r <= 0) break;
    have += static_cast<size_t>(r);
  }
  got.resize(have);
  return got;
}

Bytes bytesOf(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A TCP peer that echoes what each connection sends, on its own thread.
class EchoPeer {
 public:
  EchoPeer() {
    auto listening = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
    EXPECT_TRUE(listening);
    if (listening) listening_ = std::move(*listening);
    address_ = *net::localAddress(listening_.get());
    thread_ = std::thread([this] { run(); });
  }
  ~EchoPeer() {
    stop_ = true;
    thread_.join();
    for (int fd : connections_) ::close(fd);
  }
  const TransportAddress& address() const { return address_; }
  // The address each connection came from.
  std::vector<TransportAddress> sources() {
    std::lock_guard lock(mutex_);
    return sources_;
  }

 private:
  void run() {
    uint8_t buf[4096];
    while (!stop_) {
      std::vector<pollfd> fds{{listening_.get(), POLLIN, 0}};
      for (int fd : connections_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        if (auto a = net::acceptTcp(listening_.get()); a && *a) {
          std::lock_guard lock(mutex_);
          sources_.push_back((*a)->remote);
          connections_.push_back((*a)->fd.release());
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) (void)::send(fds[i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
    }
  }

  net::FileDescriptor listening_;
  TransportAddress address_;
  std::thread thread_;
  std::atomic<bool> stop_ = false;
  std::vector<int> connections_;
  std::mutex mutex_;
  std::vector<TransportAddress> sources_;
};

// STUN over one TCP connection with long-term credentials (u/p, realm r).
class StreamClient {
 public:
  explicit StreamClient(const TransportAddress& server) : fd_(connectTo(server)) {}
  ~StreamClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void useNonce(const std::string& nonce) { nonce_ = nonce; }
  const std::string& nonce() const { return nonce_; }

  // A request; on 401 or 438 with a NONCE, once more with it, as clients do.
  std::optional<Bytes> request(stun::Method method,
                               const std::function<void(stun::MessageBuilder&)>& fill) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      stun::TransactionId txid{};
      txid[0] = static_cast<uint8_t>(++txid_);
      const auto key = stun::longTermKey("u", "r", "p");
      ::kturn::testing::TurnRequest request{
          .method = method, .transaction_id = txid, .fill = fill, .fingerprint = false};
      if (!nonce_.empty()) {
        request.credentials = {.username = "u", .realm = "r", .nonce = nonce_, .key = key.span()};
      }
      const auto msg = *::kturn::testing::buildRequest(request);
      if (!sendAll(fd_, msg)) return std::nullopt;
      auto reply = readMessage();
      if (!reply) return std::nullopt;
      const int code = errorCode(*reply);
      const auto m = *stun::MessageView::parse(*reply);
      if ((code == 401 || code == 438) && m.has(stun::attr::kNonce)) {
        nonce_ = std::string(stun::decodeString(*m.value(stun::attr::kNonce)));
        continue;
      }
      return reply;
    }
    return std::nullopt;
  }

  // The next STUN message on the connection.
  std::optional<Bytes> readMessage() {
    Bytes header = readExactly(fd_, stun::kHeaderSize);
    if (header.size() != stun::kHeaderSize) return std::nullopt;
    const Bytes body = readExactly(fd_, stun::load16(header.data() + 2));
    header.insert(header.end(), body.begin(), body.end());
    if (!stun::MessageView::parse(header)) return std::nullopt;
    return header;
  }

  static int errorCode(const Bytes& message) {
    const auto m = *stun::MessageView::parse(message);
    const auto v = m.value(stun::attr::kErrorCode);
    return v ? stun::decodeErrorCode(*v)->code : 0;
  }
  static bool success(const std::optional<Bytes>& message) {
    return message && stun::MessageView::parse(*message)->messageClass() ==
                          stun::MessageClass::kSuccessResponse;
  }
  static std::optional<uint32_t> connectionId(const Bytes& message) {
    const auto v = stun::MessageView::parse(message)->value(stun::attr::kConnectionId);
    return v ? stun::decodeUint32(*v) : std::nullopt;
  }
  static std::optional<TransportAddress> xorAddress(const Bytes& message, uint16_t type) {
    const auto m = *stun::MessageView::parse(message);
    const auto v = m.value(type);
    return v ? stun::decodeXorAddress(*v, m.xorPad()) : std::nullopt;
  }

 private:
  int fd_;
  std::string nonce_;
  int txid_ = 0;
};

class DaemonTcpRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testing::freeTcpPort();
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-tcp-relay-test-" + std::to_string(::getpid()) + ".yaml");
    // The echo peer is on 127.0.0.1, admitted by a TCP cluster's /32 endpoint; 127.0.0.2 is in
    // a UDP cluster only.
    std::ofstream(path_) << "version: v1\n"
                            "admin: {name: t, healthcheck_endpoint: \"\""
                         << admin_extra_
                         << "}\n"
                            "auth: {type: static, realm: r, credentials: {username: u, "
                            "password: p}}\n"
                            "listeners:\n"
                            "  - {name: tcp, protocol: TURN-TCP, address: 127.0.0.1, port: "
                         << port_
                         << ", routes: [echo, udp-only]}\n"
                            "clusters:\n"
                            "  - {name: echo, type: STATIC, protocol: TCP, endpoints: "
                            "[127.0.0.1/32]}\n"
                            "  - {name: udp-only, type: STATIC, endpoints: [127.0.0.2/32]}\n";
    daemon_ = testing::startDaemonOn(path_, 2);
    ASSERT_TRUE(daemon_);
    server_ = TransportAddress{IpAddress::v4(0x7F000001), port_};
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  static stun::MessageBuilder& tcpTransport(stun::MessageBuilder& b) {
    const uint8_t tcp[] = {6, 0, 0, 0};
    return b.add(stun::attr::kRequestedTransport, tcp);
  }
  // A TCP allocation on `control`: its relayed address.
  TransportAddress allocateTcp(StreamClient& control) {
    const auto reply = control.request(stun::Method::kAllocate, [](auto& b) { tcpTransport(b); });
    EXPECT_TRUE(StreamClient::success(reply));
    const auto relayed =
        reply ? StreamClient::xorAddress(*reply, stun::attr::kXorRelayedAddress) : std::nullopt;
    EXPECT_TRUE(relayed);
    return relayed.value_or(TransportAddress{});
  }
  std::optional<Bytes> connect(StreamClient& control, const TransportAddress& peer) {
    return control.request(stun::Method::kConnect, [&](stun::MessageBuilder& b) {
      b.addXorAddress(stun::attr::kXorPeerAddress, peer);
    });
  }
  // A data connection bound to `id`, or null.
  std::unique_ptr<StreamClient> bind(StreamClient& control, uint32_t id) {
    auto data = std::make_unique<StreamClient>(server_);
    data->useNonce(control.nonce());  // the nonce serves every port of the client
    const auto reply = data->request(stun::Method::kConnectionBind, [id](stun::MessageBuilder& b) {
      b.addUint32(stun::attr::kConnectionId, id);
    });
    EXPECT_TRUE(StreamClient::success(reply));
    return StreamClient::success(reply) ? std::move(data) : nullptr;
  }

  std::string admin_extra_;  // more of `admin`, set before SetUp()
  uint16_t port_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
  TransportAddress server_;
};

TEST_F(DaemonTcpRelayTest, DataFlowsBetweenAClientAndATcpEchoPeerThroughConnectAndConnectionBind) {
  EchoPeer peer;
  // Several data connections, so that with two workers some land on the worker that does not
  // own the allocation and are handed over (each does with odds of one half; twenty rounds
  // all missing it would happen once in a million runs).
  constexpr int kRounds = 20;
  uint64_t echoed = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StreamClient control(server_);
    const TransportAddress relayed = allocateTcp(control);
    const auto connected = connect(control, peer.address());
    ASSERT_TRUE(StreamClient::success(connected));
    const auto id = StreamClient::connectionId(*connected);
    ASSERT_TRUE(id);
    auto data = bind(control, *id);
    ASSERT_TRUE(data);

    const Bytes ping = bytesOf("ping " + std::to_string(round) + std::string(3000, 'x'));
    ASSERT_TRUE(sendAll(data->fd(), ping));
    EXPECT_EQ(readExactly(data->fd(), ping.size()), ping);
    echoed += ping.size();
    // The peer saw the connection come from the relayed address (RFC 6062 §5.2).
    EXPECT_EQ(peer.sources().back(), relayed);

    // A second Connect to the same peer while the first connection lives: 446.
    const auto again = connect(control, peer.address());
    ASSERT_TRUE(again);
    EXPECT_EQ(StreamClient::errorCode(*again), 446);
  }
  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_EQ(stats.turn.peer_connections_connected, static_cast<uint64_t>(kRounds));
  EXPECT_EQ(stats.turn.peer_connections_bound, static_cast<uint64_t>(kRounds));
  uint64_t handed_over = 0;
  for (const worker::ListenerTraffic& t : stats.traffic) handed_over += t.handed_over;
  EXPECT_GT(handed_over, 0u) << "every data connection landed on its allocation's worker";
  // The streams' bytes are relayed bytes (kturn_relayed_bytes_total), both ways, and the
  // listener's client-side bytes (stunner_listener_bytes_total) beyond the frames it read.
  EXPECT_EQ(stats.turn.client_bytes_relayed, echoed);
  EXPECT_EQ(stats.turn.peer_bytes_relayed, echoed);
  worker::ListenerTraffic listener;
  for (const worker::ListenerTraffic& t : stats.traffic) listener += t;
  EXPECT_GE(listener.rx_bytes, echoed + 20 * stun::kHeaderSize);  // + at least the requests
  EXPECT_GE(listener.tx_bytes, echoed + 20 * stun::kHeaderSize);
}

class DaemonTcpRelayCapTest : public DaemonTcpRelayTest {
 protected:
  DaemonTcpRelayCapTest() { admin_extra_ = ", limits: {allocation_kbps: 256}"; }  // 32,000 B/s
};

// admin.limits paces a peer connection instead of dropping from it: everything arrives, no
// faster than the cap allows after its burst.
TEST_F(DaemonTcpRelayCapTest, APeerConnectionIsPacedAtTheAllocationsCapAndLosesNothing) {
  EchoPeer peer;
  StreamClient control(server_);
  allocateTcp(control);
  const auto connected = connect(control, peer.address());
  ASSERT_TRUE(StreamClient::success(connected));
  auto data = bind(control, *StreamClient::connectionId(*connected));
  ASSERT_TRUE(data);

  constexpr size_t kBytes = 64 * 1024;
  Bytes payload(kBytes);
  for (size_t i = 0; i < kBytes; ++i) payload[i] = static_cast<uint8_t>(i * 31 + 3);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(sendAll(data->fd(), payload));
  EXPECT_TRUE(readExactly(data->fd(), kBytes) == payload);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A 16 KiB burst, then 32,000 B/s each way: the last byte cannot be back before 1.5 s.
  constexpr double kFloor = (kBytes - 16 * 1024) / 32'000.0;
  EXPECT_GE(seconds, kFloor);
  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_GT(stats.turn.connection_reads_held, 0u);
  EXPECT_EQ(stats.turn.client_bytes_relayed, kBytes);
  EXPECT_EQ(stats.turn.peer_bytes_relayed, kBytes);
}

TEST_F(DaemonTcpRelayTest, PeersOutsideEveryTcpClusterAreRefusedAndAClosedPortIs447) {
  StreamClient control(server_);
  allocateTcp(control);
  // 127.0.0.2 is only in a UDP cluster; 192.0.2.1 is in none.
  for (const char* refused : {"127.0.0.2:7000", "192.0.2.1:7000"}) {
    const auto reply = connect(control, *TransportAddress::parse(refused));
    ASSERT_TRUE(reply) << refused;
    EXPECT_EQ(StreamClient::errorCode(*reply), 403) << refused;
  }
  TransportAddress closed;
  {
    auto l = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
    ASSERT_TRUE(l);
    closed = *net::localAddress(l->get());
  }
  const auto reply = connect(control, closed);
  ASSERT_TRUE(reply);
  EXPECT_EQ(StreamClient::errorCode(*reply), 447);
}

TEST_F(DaemonTcpRelayTest, APeerWithAPermissionConnectingToTheRelayIsOfferedToTheClient) {
  StreamClient control(server_);
  const TransportAddress relayed = allocateTcp(control);

  // Without a permission the relay closes the connection at once.
  const int stranger = connectTo(relayed);
  ASSERT_GE(stranger, 0);
  uint8_t byte;
  EXPECT_LE(::recv(stranger, &byte, 1, 0), 0);
  ::close(stranger);

  ASSERT_TRUE(StreamClient::success(
      control.request(stun::Method::kCreatePermission, [](stun::MessageBuilder& b) {
        b.addXorAddress(stun::attr::kXorPeerAddress, *TransportAddress::parse("127.0.0.1:0"));
      })));
  const int peer = connectTo(relayed);
  ASSERT_GE(peer, 0);
  const Bytes early = bytesOf("sent before the bind");
  ASSERT_TRUE(sendAll(peer, early));

  const auto attempt = control.readMessage();
  ASSERT_TRUE(attempt);
  const auto m = *stun::MessageView::parse(*attempt);
  EXPECT_EQ(m.method(), stun::Method::kConnectionAttempt);
  EXPECT_EQ(m.messageClass(), stun::MessageClass::kIndication);
  const auto from = StreamClient::xorAddress(*attempt, stun::attr::kXorPeerAddress);
  ASSERT_TRUE(from);
  EXPECT_EQ(*from, *net::localAddress(peer));
  const auto id = StreamClient::connectionId(*attempt);
  ASSERT_TRUE(id);

  auto data = bind(control, *id);
  ASSERT_TRUE(data);
  EXPECT_EQ(readExactly(data->fd(), early.size()), early);
  const Bytes reply = bytesOf("and back");
  ASSERT_TRUE(sendAll(data->fd(), reply));
  EXPECT_EQ(readExactly(peer, reply.size()), reply);

  // The client's data connection closes: so does the peer's.
  data.reset();
  EXPECT_EQ(::recv(peer, &byte, 1, 0), 0);
  ::close(peer);
}

}  // namespace
}  // namespace kturn::daemon
