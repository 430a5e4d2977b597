// The TURN-TCP listener over real loopback connections: frames split and joined as TCP delivers
// them, answers written back, and the limits (framing errors, connection cap, idle timeout).
#include "worker/stream_listener.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "net/sockaddr.h"
#include "net/tcp_socket.h"
#include "stun/channel_data.h"

namespace kturn::worker {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes channelData(uint16_t channel, uint16_t length, uint8_t fill) {
  Bytes frame(stun::kChannelDataHeaderSize + ((length + 3u) & ~3u), 0);
  stun::writeChannelDataHeader(frame.data(), channel, length);
  std::fill(frame.begin() + 4, frame.begin() + 4 + length, fill);
  return frame;
}

class StreamListenerTest : public ::testing::Test {
 protected:
  void start(StreamListener::Limits limits = {}) {
    auto listening = net::listenTcp(*TransportAddress::parse("127.0.0.1:0"), {});
    ASSERT_TRUE(listening) << listening.error().message;
    address_ = *net::localAddress(listening->get());
    StreamListener::Callbacks cb;
    cb.on_frame = [this](const FiveTuple& t, std::span<const uint8_t> f) {
      frames_.emplace_back(f.begin(), f.end());
      tuple_ = t;
    };
    cb.on_batch_end = [this] { ++batches_; };
    cb.on_closed = [this](const FiveTuple&) { ++closed_; };
    cb.has_allocation = [](const FiveTuple&) { return false; };
    listener_ = std::make_unique<StreamListener>(loop_, 1, std::move(*listening), limits, cb);
  }

  int connect() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(address_, ss);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
    fds_.push_back(fd);
    return fd;
  }

  void write(int fd, const Bytes& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Runs the loop until `pred` holds (at most ~2 s).
  template <class Pred>
  bool runUntil(Pred pred) {
    for (int i = 0; i < 200 && !pred(); ++i) loop_.runOnce(std::chrono::milliseconds(10));
    return pred();
  }

  // True when the peer has closed `fd` (read returns 0 or an error).
  bool closedByServer(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return false;
    uint8_t buf[64];
    return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
  }

  void TearDown() override {
    listener_.reset();
    for (int fd : fds_) ::close(fd);
  }

  net::EventLoop loop_;
  TransportAddress address_;
  std::unique_ptr<StreamListener> listener_;
  std::vector<Bytes> frames_;
  FiveTuple tuple_;
  int batches_ = 0;
  int closed_ = 0;
  std::vector<int> fds_;
};

TEST_F(StreamListenerTest, FramesAreCutWhereverTcpSplitsOrJoinsThem) {
  start();
  const int fd = connect();
  const Bytes a = channelData(0x4001, 5, 0xA1);
  const Bytes b = channelData(0x4002, 8, 0xB2);
  const Bytes c = channelData(0x4003, 300, 0xC3);
  Bytes joined = a;
  joined.insert(joined.end(), b.begin(), b.end());
  joined.insert(joined.end(), c.begin(), c.begin() + 100);  // c is cut in two writes
  write(fd, joined);
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 2; }));
  write(fd, Bytes(c.begin() + 100, c.end()));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 3; }));
  EXPECT_EQ(frames_[0], a);
  EXPECT_EQ(frames_[1], b);
  EXPECT_EQ(frames_[2], c);
  EXPECT_EQ(tuple_.protocol, TransportProtocol::kTcp);
  EXPECT_EQ(tuple_.server, address_);
  EXPECT_GE(batches_, 2);

  // An answer goes back on the same connection.
  ASSERT_TRUE(listener_->send(tuple_.client, a));
  listener_->flush();
  Bytes got(a.size());
  ASSERT_EQ(::recv(fd, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(a.size()));
  EXPECT_EQ(got, a);
}

TEST_F(StreamListenerTest, BytesThatAreNeitherStunNorChannelDataCloseTheConnection) {
  start();
  const int fd = connect();
  write(fd, {0x16, 0x03, 0x01, 0x00, 0x20});  // a TLS ClientHello on a TCP listener
  ASSERT_TRUE(runUntil([&] { return closed_ == 1; }));
  EXPECT_EQ(listener_->stats().closed_framing, 1u);
  EXPECT_TRUE(closedByServer(fd));
  EXPECT_EQ(listener_->connectionCount(), 0u);
}

TEST_F(StreamListenerTest, ConnectionsBeyondTheCapAreRefused) {
  start({.max_connections = 1});
  connect();
  ASSERT_TRUE(runUntil([&] { return listener_->connectionCount() == 1; }));
  const int second = connect();
  ASSERT_TRUE(runUntil([&] { return listener_->stats().refused == 1; }));
  EXPECT_TRUE(closedByServer(second));
  EXPECT_EQ(listener_->connectionCount(), 1u);
}

TEST_F(StreamListenerTest, IdleConnectionsWithoutAllocationAreClosed) {
  start({.idle_timeout = std::chrono::seconds(5)});
  const int fd = connect();
  ASSERT_TRUE(runUntil([&] { return listener_->connectionCount() == 1; }));
  listener_->sweep(std::chrono::steady_clock::now());
  EXPECT_EQ(listener_->connectionCount(), 1u) << "closed before its idle timeout";
  listener_->sweep(std::chrono::steady_clock::now() + std::chrono::seconds(6));
  EXPECT_EQ(listener_->connectionCount(), 0u);
  EXPECT_EQ(listener_->stats().closed_idle, 1u);
  EXPECT_EQ(closed_, 1);
  EXPECT_TRUE(closedByServer(fd));
}

TEST_F(StreamListenerTest, OutputBeyondTheBoundIsDroppedNotBuffered) {
  start({.max_output_bytes = 64});
  connect();
  ASSERT_TRUE(runUntil([&] { return listener_->connectionCount() == 1; }));
  write(fds_[0], channelData(0x4001, 4, 1));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 1; }));
  const Bytes big = channelData(0x4001, 40, 2);  // 44 bytes: one fits, the second does not
  EXPECT_TRUE(listener_->send(tuple_.client, big));
  EXPECT_FALSE(listener_->send(tuple_.client, big));
  EXPECT_EQ(listener_->stats().frames_dropped, 1u);
  listener_->flush();
  EXPECT_TRUE(listener_->send(tuple_.client, big)) << "the bound counts unsent bytes only";
}

}  // namespace
}  // namespace kturn::worker
