// The TURN-TLS listener over real loopback connections with a real OpenSSL client: frames
// decrypted and delivered whatever the record boundaries, answers encrypted back, handshake
// failures and timeouts counted, and a certificate rotation that leaves established connections
// alone while new ones get the new certificate.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "config/self_signed_cert.h"
#include "net/sockaddr.h"
#include "net/tcp_socket.h"
#include "net/tls_test_client.h"
#include "stun/channel_data.h"
#include "worker/stream_listener.h"

namespace kturn::worker {
namespace {

using Bytes = std::vector<uint8_t>;
using net::testing::TlsTestClient;

Bytes channelData(uint16_t channel, uint16_t length, uint8_t fill) {
  Bytes frame(stun::kChannelDataHeaderSize + ((length + 3u) & ~3u), 0);
  stun::writeChannelDataHeader(frame.data(), channel, length);
  std::fill(frame.begin() + 4, frame.begin() + 4 + length, fill);
  return frame;
}

struct Certificate {
  net::TlsContextPtr context;
  Bytes der;  // what a client sees
};

Certificate makeCertificate() {
  auto pem = config::generateSelfSignedCert();
  EXPECT_TRUE(pem);
  auto context = net::TlsContext::server(pem->cert_pem, pem->key_pem, net::TlsKind::kTls);
  EXPECT_TRUE(context) << context.error().message;
  return {*context, net::testing::derOfPem(pem->cert_pem)};
}

class StreamListenerTlsTest : public ::testing::Test {
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
    cb.on_batch_end = [] {};
    cb.on_closed = [this](const FiveTuple&) { ++closed_; };
    cb.has_allocation = [](const FiveTuple&) { return false; };
    listener_ = std::make_unique<StreamListener>(loop_, 1, std::move(*listening), limits, cb,
                                                 first_.context);
  }

  int connectFd() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(address_, ss);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
    return fd;
  }

  std::unique_ptr<TlsTestClient> connectTls() {
    auto client = std::make_unique<TlsTestClient>(connectFd());
    EXPECT_TRUE(runUntil([&] { return client->handshake(); })) << "no TLS handshake";
    return client;
  }

  // Runs the loop until `pred` holds (at most ~2 s).
  template <class Pred>
  bool runUntil(Pred pred) {
    for (int i = 0; i < 200 && !pred(); ++i) loop_.runOnce(std::chrono::milliseconds(10));
    return pred();
  }

  void TearDown() override { listener_.reset(); }

  Certificate first_ = makeCertificate();
  net::EventLoop loop_;
  TransportAddress address_;
  std::unique_ptr<StreamListener> listener_;
  std::vector<Bytes> frames_;
  FiveTuple tuple_;
  int closed_ = 0;
};

TEST_F(StreamListenerTlsTest, FramesArriveDecryptedAndAnswersGoBackEncrypted) {
  start();
  auto client = connectTls();
  EXPECT_EQ(client->peerCertificate(), first_.der);
  const Bytes a = channelData(0x4001, 5, 0xA1);
  const Bytes b = channelData(0x4002, 3000, 0xB2);
  // One frame and a half in one record, the rest of the second in another.
  Bytes joined = a;
  joined.insert(joined.end(), b.begin(), b.begin() + 1000);
  ASSERT_TRUE(client->write(joined));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 1; }));
  ASSERT_TRUE(client->write(std::span(b).subspan(1000)));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 2; }));
  EXPECT_EQ(frames_[0], a);
  EXPECT_EQ(frames_[1], b);
  EXPECT_EQ(tuple_.protocol, TransportProtocol::kTcp);

  ASSERT_TRUE(listener_->send(tuple_.client, b));
  ASSERT_TRUE(listener_->send(tuple_.client, a));
  listener_->flush();
  Bytes expected = b;
  expected.insert(expected.end(), a.begin(), a.end());
  ASSERT_TRUE(runUntil([&] {
    client->poll();
    return client->received().size() >= expected.size();
  }));
  EXPECT_EQ(client->received(), expected);
  EXPECT_GT(listener_->stats().rx_bytes, a.size() + b.size()) << "counts records, not plaintext";
}

TEST_F(StreamListenerTlsTest, PlainTurnOnATlsListenerIsAHandshakeFailure) {
  start();
  const int fd = connectFd();
  const Bytes stun_over_tcp = channelData(0x4001, 8, 1);
  ASSERT_EQ(::send(fd, stun_over_tcp.data(), stun_over_tcp.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(stun_over_tcp.size()));
  ASSERT_TRUE(runUntil([&] { return closed_ == 1; }));
  EXPECT_EQ(listener_->stats().tls_failures, 1u);
  EXPECT_TRUE(frames_.empty());
  ::close(fd);
}

TEST_F(StreamListenerTlsTest, AClientThatNeverHandshakesIsClosedAtTheHandshakeTimeout) {
  start({.idle_timeout = std::chrono::seconds(30), .handshake_timeout = std::chrono::seconds(3)});
  const int silent = connectFd();
  auto done = connectTls();
  // A frame through it: the server has read the client's Finished too.
  ASSERT_TRUE(done->write(channelData(0x4001, 4, 1)));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 1; }));
  ASSERT_EQ(listener_->connectionCount(), 2u);
  listener_->sweep(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(listener_->connectionCount(), 2u) << "closed before its handshake timeout";
  listener_->sweep(std::chrono::steady_clock::now() + std::chrono::seconds(4));
  EXPECT_EQ(listener_->connectionCount(), 1u) << "only the silent one goes";
  EXPECT_EQ(listener_->stats().closed_handshake, 1u);
  EXPECT_EQ(listener_->stats().closed_idle, 0u);
  ::close(silent);
}

TEST_F(StreamListenerTlsTest, ARotatedCertificateServesNewConnectionsAndKeepsOldOnes) {
  start();
  auto before = connectTls();
  const Certificate second = makeCertificate();
  ASSERT_NE(second.der, first_.der);
  listener_->setTlsContext(second.context);

  auto after = connectTls();
  EXPECT_EQ(after->peerCertificate(), second.der);
  EXPECT_EQ(before->peerCertificate(), first_.der);

  // The connection made before the rotation still carries frames both ways.
  const Bytes frame = channelData(0x4001, 16, 7);
  ASSERT_TRUE(before->write(frame));
  ASSERT_TRUE(runUntil([&] { return frames_.size() == 1; }));
  ASSERT_TRUE(listener_->send(tuple_.client, frame));
  listener_->flush();
  ASSERT_TRUE(runUntil([&] {
    before->poll();
    return before->received().size() >= frame.size();
  }));
  EXPECT_EQ(before->received(), frame);
  EXPECT_FALSE(before->closed());
  EXPECT_EQ(listener_->connectionCount(), 2u);
}

}  // namespace
}  // namespace kturn::worker
