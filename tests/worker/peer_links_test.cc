// RFC 6062 peer connections over real loopback sockets: a connect from the relay's address, a
// client data connection detached from its stream listener and joined to the peer connection,
// bytes both ways without loss (also through a full buffer), reads held at a bandwidth cap's
// allowance, the client side counted for its listener, and closes in either direction.
#include "worker/peer_links.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "net/sockaddr.h"
#include "net/tcp_socket.h"
#include "stun/channel_data.h"

namespace kturn::worker {
namespace {

using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

// The listener the data connections came in on.
constexpr turn::ListenerId kDataListener = 2;

Bytes bytesOf(const std::string& s) { return Bytes(s.begin(), s.end()); }

class PeerLinksTest : public ::testing::Test {
 protected:
  PeerLinksTest() {
    links_ = std::make_unique<PeerLinks>(loop_, callbacks());

    // The client side: a TURN-TCP listener whose first frame (standing in for a ConnectionBind)
    // is answered with "OK" and detaches the connection.
    auto listening = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
    EXPECT_TRUE(listening);
    listener_address_ = *net::localAddress(listening->get());
    StreamListener::Callbacks lc;
    lc.on_frame = [this](const FiveTuple& t, std::span<const uint8_t>) {
      const Bytes ok = bytesOf("OK");
      stream_->send(t.client, ok);
      stream_->requestDetach(t.client);
    };
    lc.on_batch_end = [this] { stream_->flush(); };
    lc.on_closed = [](const FiveTuple&) {};
    lc.has_allocation = [](const FiveTuple&) { return false; };
    lc.on_detached = [this](std::unique_ptr<StreamListener::Connection> c) {
      detached_ = std::move(c);
    };
    stream_ = std::make_unique<StreamListener>(loop_, 1, std::move(*listening),
                                               StreamListener::Limits{}, lc);
  }
  ~PeerLinksTest() override {
    links_.reset();
    stream_.reset();
    for (int fd : fds_) ::close(fd);
  }

  // Records what the links report; no caps.
  PeerLinks::Callbacks callbacks() {
    PeerLinks::Callbacks cb;
    cb.on_connected = [this](turn::ConnectionId id, bool up) { connected_.push_back({id, up}); };
    cb.on_closed = [this](turn::ConnectionId id) { closed_.push_back(id); };
    return cb;
  }

  // A peer connected to a TCP relay, its connection adopted by the links as `id`; the peer's
  // (blocking) socket.
  int adoptedPeer(turn::ConnectionId id) {
    auto relay = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {.reuse_port = true});
    EXPECT_TRUE(relay);
    const int peer = connectTo(*net::localAddress(relay->get()));
    net::Accepted accepted = acceptOn(relay->get());
    // acceptOn() made it blocking; the link wants it non-blocking.
    ::fcntl(accepted.fd.get(), F_SETFL, ::fcntl(accepted.fd.get(), F_GETFL) | O_NONBLOCK);
    links_->adopt(allocation_, id, std::move(accepted.fd));
    return peer;
  }

  // True if nothing more arrives on `fd` while the loop runs for a while.
  bool staysQuiet(int fd) {
    for (int i = 0; i < 30; ++i) loop_.runOnce(std::chrono::milliseconds(2));
    uint8_t byte;
    return ::recv(fd, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
  }

  int track(int fd) {
    fds_.push_back(fd);
    return fd;
  }

  int connectTo(const TransportAddress& to) {
    const int fd = track(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(to, ss);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
    return fd;
  }

  // Runs the loop until `done` holds, at most ~3 s.
  template <class Pred>
  bool runUntil(Pred done) {
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    while (!done() && Clock::now() < deadline) loop_.runOnce(std::chrono::milliseconds(10));
    return done();
  }

  // Reads exactly `n` bytes from a blocking socket while running the loop; fewer on EOF/timeout.
  Bytes readExactly(int fd, size_t n) {
    Bytes got;
    uint8_t buf[65536];
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (got.size() < n && Clock::now() < deadline) {
      loop_.runOnce(std::chrono::milliseconds(1));
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1) != 1) continue;
      const ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - got.size()), 0);
      if (r <= 0) break;
      got.insert(got.end(), buf, buf + r);
    }
    return got;
  }

  void send(int fd, const Bytes& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // A client data connection that sent its "ConnectionBind" frame plus `after`, detached from the
  // stream listener; the client's socket in `client_fd`.
  std::unique_ptr<StreamListener::Connection> dataConnection(int& client_fd, const Bytes& after) {
    client_fd = connectTo(listener_address_);
    Bytes frame(stun::kChannelDataHeaderSize + 4, 0);
    stun::writeChannelDataHeader(frame.data(), 0x4000, 4);
    frame.insert(frame.end(), after.begin(), after.end());
    send(client_fd, frame);
    EXPECT_TRUE(runUntil([&] { return detached_ != nullptr; }));
    return std::move(detached_);
  }

  // A peer: a listening socket, and the connection the relay makes to it.
  net::Accepted acceptOn(int listening) {
    net::Accepted a;
    EXPECT_TRUE(runUntil([&] {
      auto r = net::acceptTcp(listening);
      if (r && *r) a = std::move(**r);
      return a.fd.valid();
    }));
    // Blocking from here: the test reads and writes it directly.
    const int flags = ::fcntl(a.fd.get(), F_GETFL);
    ::fcntl(a.fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return a;
  }

  net::EventLoop loop_;
  std::unique_ptr<PeerLinks> links_;
  std::unique_ptr<StreamListener> stream_;
  TransportAddress listener_address_;
  std::unique_ptr<StreamListener::Connection> detached_;
  std::vector<std::pair<turn::ConnectionId, bool>> connected_;
  std::vector<turn::ConnectionId> closed_;
  std::vector<int> fds_;
  const turn::AllocationId allocation_{1, 1};
};

TEST_F(PeerLinksTest, AConnectFromTheRelayAddressIsJoinedToTheDataConnectionBothWays) {
  auto peer_listener = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
  ASSERT_TRUE(peer_listener);
  // The TCP relay listens on its address; the connect to the peer comes from that same address.
  auto relay = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {.reuse_port = true});
  ASSERT_TRUE(relay);
  const TransportAddress relayed = *net::localAddress(relay->get());

  ASSERT_TRUE(links_->connect(allocation_, 7, relayed, *net::localAddress(peer_listener->get()),
                              Clock::now()));
  net::Accepted peer = acceptOn(peer_listener->get());
  EXPECT_EQ(peer.remote, relayed);
  ASSERT_TRUE(runUntil([&] { return !connected_.empty(); }));
  EXPECT_EQ(connected_[0], std::make_pair(turn::ConnectionId{7}, true));

  int client = -1;
  auto data = dataConnection(client, bytesOf("early"));
  ASSERT_TRUE(data);
  links_->join(7, kDataListener, std::move(data));
  EXPECT_EQ(readExactly(client, 2), bytesOf("OK"));  // the bind's answer comes first
  EXPECT_EQ(readExactly(peer.fd.get(), 5), bytesOf("early"));

  send(client, bytesOf("hello"));
  EXPECT_EQ(readExactly(peer.fd.get(), 5), bytesOf("hello"));
  send(peer.fd.get(), bytesOf("world"));
  EXPECT_EQ(readExactly(client, 5), bytesOf("world"));
  // The listener saw only the bind's frame; its series count the relayed bytes too.
  ASSERT_GT(links_->listenerTraffic().size(), kDataListener);
  const turn::TrafficCounters& wire = links_->listenerTraffic()[kDataListener];
  EXPECT_EQ(wire.rx_bytes, 10u);  // "early" and "hello"
  EXPECT_EQ(wire.tx_bytes, 5u);   // "world"
  EXPECT_EQ(wire.rx_packets + wire.tx_packets, 0u);

  // The peer closes: the link goes, the core is told, the client sees EOF.
  peer.fd.reset();
  ASSERT_TRUE(runUntil([&] { return !closed_.empty(); }));
  EXPECT_EQ(closed_[0], 7u);
  EXPECT_EQ(links_->size(), 0u);
  uint8_t byte;
  EXPECT_EQ(::recv(client, &byte, 1, 0), 0);
}

TEST_F(PeerLinksTest, AConnectToAClosedPortFails) {
  TransportAddress closed;
  {
    auto l = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
    ASSERT_TRUE(l);
    closed = *net::localAddress(l->get());
  }
  auto relay = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {.reuse_port = true});
  ASSERT_TRUE(relay);
  ASSERT_TRUE(
      links_->connect(allocation_, 9, *net::localAddress(relay->get()), closed, Clock::now()));
  ASSERT_TRUE(runUntil([&] { return !connected_.empty(); }));
  EXPECT_EQ(connected_[0], std::make_pair(turn::ConnectionId{9}, false));
  EXPECT_EQ(links_->size(), 0u);
  EXPECT_TRUE(closed_.empty());
}

TEST_F(PeerLinksTest, AnAcceptedPeerIsBufferedUntilTheJoinAndAMegabyteCrossesAFullBuffer) {
  const int peer = adoptedPeer(11);
  send(peer, bytesOf("before-bind"));
  for (int i = 0; i < 20; ++i) loop_.runOnce(std::chrono::milliseconds(5));

  int client = -1;
  auto data = dataConnection(client, {});
  ASSERT_TRUE(data);
  links_->join(11, kDataListener, std::move(data));
  EXPECT_EQ(readExactly(client, 2), bytesOf("OK"));
  EXPECT_EQ(readExactly(client, 11), bytesOf("before-bind"));

  // 1 MiB from the peer, far more than the link buffers: the client reads it all, in order.
  constexpr size_t kTotal = 1 << 20;
  Bytes pattern(kTotal);
  for (size_t i = 0; i < kTotal; ++i) pattern[i] = static_cast<uint8_t>(i * 31 + 7);
  ::fcntl(peer, F_SETFL, ::fcntl(peer, F_GETFL) | O_NONBLOCK);
  Bytes got;
  size_t sent = 0;
  uint8_t buf[8192];
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (got.size() < kTotal && Clock::now() < deadline) {
    if (sent < kTotal) {
      const ssize_t n = ::send(peer, pattern.data() + sent, kTotal - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    loop_.runOnce(std::chrono::milliseconds(1));
    const ssize_t r = ::recv(client, buf, sizeof buf, MSG_DONTWAIT);  // a slow reader
    if (r > 0) got.insert(got.end(), buf, buf + r);
  }
  ASSERT_EQ(got.size(), kTotal);
  EXPECT_TRUE(got == pattern);
  // (The "OK" went out before the detach, unless the socket was full then.)
  EXPECT_GE(links_->stats().to_client_bytes, 11 + kTotal);
  EXPECT_LE(links_->stats().to_client_bytes, 2 + 11 + kTotal);

  // The client closes: the peer sees EOF.
  ::shutdown(client, SHUT_RDWR);
  ASSERT_TRUE(runUntil([&] { return !closed_.empty(); }));
  EXPECT_EQ(closed_[0], 11u);
}

// Caps pace a stream rather than drop from it: each side reads no more than its allowance, a
// side with none left is not read (its bytes wait in the kernel) and the sweep reads it again.
TEST_F(PeerLinksTest, ACapHoldsReadsAtTheAllowanceAndTheSweepReadsOn) {
  std::array<uint64_t, 2> allowance{1000, 1500};  // [to the client, to the peer]
  std::array<uint64_t, 2> spent{};
  PeerLinks::Callbacks cb = callbacks();
  cb.allowance = [&](turn::AllocationId allocation, bool to_peer) {
    EXPECT_EQ(allocation, allocation_);
    return allowance[to_peer];
  };
  cb.spend = [&](turn::AllocationId, bool to_peer, uint64_t bytes) {
    EXPECT_LE(bytes, allowance[to_peer]) << "read past the allowance";
    allowance[to_peer] -= bytes;
    spent[to_peer] += bytes;
  };
  links_ = std::make_unique<PeerLinks>(loop_, cb);
  const int peer = adoptedPeer(13);
  int client = -1;
  auto data = dataConnection(client, {});
  ASSERT_TRUE(data);
  links_->join(13, kDataListener, std::move(data));
  ASSERT_EQ(readExactly(client, 2), bytesOf("OK"));

  Bytes down(4000);
  Bytes up(4000);
  for (size_t i = 0; i < down.size(); ++i) {
    down[i] = static_cast<uint8_t>(i * 7);
    up[i] = static_cast<uint8_t>(i * 13 + 1);
  }
  send(peer, down);
  send(client, up);
  Bytes to_client = readExactly(client, 1000);
  Bytes to_peer = readExactly(peer, 1500);
  EXPECT_EQ(to_client.size(), 1000u);
  EXPECT_EQ(to_peer.size(), 1500u);
  EXPECT_TRUE(staysQuiet(client));
  EXPECT_TRUE(staysQuiet(peer));
  // A sweep with nothing allowed yet reads nothing.
  links_->sweep(Clock::now());
  EXPECT_TRUE(staysQuiet(client));

  allowance = {3000, 2500};
  links_->sweep(Clock::now());
  const Bytes rest_to_client = readExactly(client, 3000);
  const Bytes rest_to_peer = readExactly(peer, 2500);
  to_client.insert(to_client.end(), rest_to_client.begin(), rest_to_client.end());
  to_peer.insert(to_peer.end(), rest_to_peer.begin(), rest_to_peer.end());
  EXPECT_TRUE(to_client == down);
  EXPECT_TRUE(to_peer == up);
  EXPECT_EQ(spent, (std::array<uint64_t, 2>{4000, 4000}));
  EXPECT_EQ(links_->listenerTraffic()[kDataListener].rx_bytes, 4000u);
  EXPECT_EQ(links_->listenerTraffic()[kDataListener].tx_bytes, 4000u);
  EXPECT_EQ(links_->size(), 1u);
}

// The hand-off between workers: a connection detached from one stream listener and adopted by
// another is framed there, starting with the bytes that followed the frame that moved it.
TEST_F(PeerLinksTest, AnAdoptedConnectionIsFramedByItsNewListener) {
  auto listening = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
  ASSERT_TRUE(listening);
  std::vector<Bytes> frames;
  StreamListener::Callbacks cb;
  cb.on_frame = [&](const FiveTuple&, std::span<const uint8_t> f) {
    frames.emplace_back(f.begin(), f.end());
  };
  cb.on_batch_end = [] {};
  cb.on_closed = [](const FiveTuple&) {};
  cb.has_allocation = [](const FiveTuple&) { return false; };
  cb.on_detached = [](std::unique_ptr<StreamListener::Connection>) {};
  StreamListener twin(loop_, 1, std::move(*listening), StreamListener::Limits{}, cb);

  const auto channelData = [](uint8_t fill) {
    Bytes frame(stun::kChannelDataHeaderSize + 4, fill);
    stun::writeChannelDataHeader(frame.data(), 0x4000, 4);
    return frame;
  };
  int client = -1;
  Bytes second = channelData(2);
  auto moved = dataConnection(client, second);  // detached after its first frame
  ASSERT_TRUE(moved);
  EXPECT_EQ(stream_->connectionCount(), 0u);
  twin.adopt(std::move(moved));
  EXPECT_EQ(twin.connectionCount(), 1u);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], second);

  send(client, channelData(3));
  ASSERT_TRUE(runUntil([&] { return frames.size() == 2; }));
  EXPECT_EQ(frames[1], channelData(3));
  EXPECT_EQ(readExactly(client, 2), bytesOf("OK"));  // written by the first listener
}

}  // namespace
}  // namespace kturn::worker
