// The TURN-DTLS listener with a real OpenSSL DTLS client over loopback UDP sockets: the stateless
// cookie exchange (a ClientHello without a valid cookie costs one HelloVerifyRequest and no
// session), the handshake, TURN messages decrypted in place both ways, and the limits.
#include "worker/dtls_listener.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "config/self_signed_cert.h"
#include "net/sockaddr.h"
#include "net/udp_socket.h"
#include "stun/channel_data.h"

namespace kturn::worker {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes channelData(uint16_t channel, uint16_t length, uint8_t fill) {
  Bytes frame(stun::kChannelDataHeaderSize + length, fill);
  stun::writeChannelDataHeader(frame.data(), channel, length);
  return frame;
}

// An OpenSSL DTLS client on a UDP socket connected to the listener's socket.
class DtlsTestClient {
 public:
  // On 127.0.0.1:`local_port` (0: any free port).
  explicit DtlsTestClient(const TransportAddress& server, uint16_t local_port = 0) {
    auto bound = net::UdpSocket::bind({*IpAddress::parse("127.0.0.1"), local_port}, {});
    EXPECT_TRUE(bound);
    socket_ = std::move(*bound);
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(server, ss);
    EXPECT_EQ(::connect(socket_.fd(), reinterpret_cast<sockaddr*>(&ss), len), 0);
    ctx_ = SSL_CTX_new(DTLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    ssl_ = SSL_new(ctx_);
    BIO* bio = BIO_new_dgram(socket_.fd(), BIO_NOCLOSE);
    BIO_ctrl(bio, BIO_CTRL_DGRAM_SET_CONNECTED, 0, &ss);
    SSL_set_bio(ssl_, bio, bio);
    SSL_set_connect_state(ssl_);
  }
  ~DtlsTestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  TransportAddress local() const { return socket_.localAddress(); }
  int fd() const { return socket_.fd(); }
  bool handshake() {
    ERR_clear_error();
    return SSL_do_handshake(ssl_) == 1;
  }
  bool write(const Bytes& b) {
    size_t n = 0;
    return SSL_write_ex(ssl_, b.data(), b.size(), &n) == 1;
  }
  std::optional<Bytes> read() {
    Bytes b(4096);
    size_t n = 0;
    ERR_clear_error();
    if (SSL_read_ex(ssl_, b.data(), b.size(), &n) != 1) return std::nullopt;
    b.resize(n);
    return b;
  }

 private:
  net::UdpSocket socket_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

void setNonBlocking(int fd) {
  struct timeval tv {
    0, 1000
  };
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

class DtlsListenerTest : public ::testing::Test {
 protected:
  static net::TlsContextPtr makeContext() {
    auto pem = config::generateSelfSignedCert();
    EXPECT_TRUE(pem);
    auto context = net::TlsContext::server(pem->cert_pem, pem->key_pem, net::TlsKind::kDtls);
    EXPECT_TRUE(context) << context.error().message;
    return *context;
  }

  void start(DtlsListener::Limits limits = {}) {
    const net::TlsContextPtr context = makeContext();
    auto bound = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
    ASSERT_TRUE(bound);
    server_ = std::move(*bound);
    setNonBlocking(server_.fd());
    DtlsListener::Callbacks cb;
    cb.on_closed = [this](const FiveTuple&) { ++closed_; };
    cb.has_allocation = [](const FiveTuple&) { return false; };
    listener_ = std::make_unique<DtlsListener>(context, limits, cb);
  }

  FiveTuple tupleFor(const TransportAddress& client) {
    return FiveTuple{TransportProtocol::kUdp, client, server_.localAddress()};
  }

  // Receives what arrived at the listener's socket, hands it to the listener, sends its output.
  void serve() {
    uint8_t buf[4096];
    for (;;) {
      sockaddr_storage from;
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(server_.fd(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) break;
      const TransportAddress client = net::fromSockaddr(reinterpret_cast<sockaddr*>(&from));
      received_.emplace_back(buf, buf + n);
      const size_t plain =
          listener_->receive(tupleFor(client), std::span(buf, sizeof buf), static_cast<size_t>(n),
                             std::chrono::steady_clock::now());
      if (plain > 0) delivered_.emplace_back(buf, buf + plain);
    }
    sendOutput();
  }

  void sendOutput() {
    listener_->forEachOutput([this](const FiveTuple& to, std::span<const uint8_t> bytes) {
      sockaddr_storage ss;
      const socklen_t len = net::toSockaddr(to.client, ss);
      ::sendto(server_.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
      ++datagrams_out_;
    });
    listener_->clearOutput();
  }

  // Alternates client and server until the client's handshake is done (bounded).
  bool handshake(DtlsTestClient& client) {
    setNonBlocking(client.fd());
    for (int i = 0; i < 500; ++i) {
      if (client.handshake()) {
        serve();  // the client's last flight
        return true;
      }
      serve();
    }
    return false;
  }

  net::UdpSocket server_;
  std::unique_ptr<DtlsListener> listener_;
  std::vector<Bytes> delivered_;
  std::vector<Bytes> received_;  // every datagram serve() read, as it arrived
  int datagrams_out_ = 0;
  int closed_ = 0;
};

TEST_F(DtlsListenerTest, HandshakesAndCarriesTurnMessagesBothWays) {
  start();
  DtlsTestClient client(server_.localAddress());
  ASSERT_TRUE(handshake(client));
  EXPECT_EQ(listener_->stats().challenged, 1u) << "the first ClientHello is challenged";
  EXPECT_EQ(listener_->stats().accepted, 1u);
  EXPECT_EQ(listener_->sessionCount(), 1u);

  const Bytes message = channelData(0x4001, 100, 0x5A);
  ASSERT_TRUE(client.write(message));
  serve();
  ASSERT_EQ(delivered_.size(), 1u);
  EXPECT_EQ(delivered_[0], message);

  const Bytes answer = channelData(0x4001, 60, 0x3C);
  ASSERT_TRUE(listener_->send(client.local(), answer));
  sendOutput();
  std::optional<Bytes> got;
  for (int i = 0; i < 100 && !got; ++i) got = client.read();
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, answer);
}

// RFC 6347 §4.2.8: a client that restarts on the address of its established session gets a new
// one, but only once it has returned the cookie; a ClientHello alone does not end the old one.
TEST_F(DtlsListenerTest, AClientRestartingOnItsAddressReplacesItsSessionOnceItReturnsTheCookie) {
  start();
  uint16_t port = 0;
  {
    DtlsTestClient first(server_.localAddress());
    ASSERT_TRUE(handshake(first));
    port = first.local().port;
  }  // the client is gone without a close_notify, as a crashed application would be
  DtlsTestClient again(server_.localAddress(), port);
  setNonBlocking(again.fd());
  (void)again.handshake();  // the first ClientHello, without a cookie
  serve();
  EXPECT_EQ(listener_->stats().challenged, 2u);
  EXPECT_EQ(closed_, 0) << "a ClientHello without the cookie left the session alone";
  EXPECT_EQ(listener_->sessionCount(), 1u);

  ASSERT_TRUE(handshake(again));
  EXPECT_EQ(listener_->stats().replaced, 1u);
  EXPECT_EQ(closed_, 1) << "the old session (and its allocation) ended";
  EXPECT_EQ(listener_->stats().accepted, 2u);
  EXPECT_EQ(listener_->sessionCount(), 1u);
  const Bytes message = channelData(0x4002, 40, 0x11);
  ASSERT_TRUE(again.write(message));
  serve();
  ASSERT_FALSE(delivered_.empty());
  EXPECT_EQ(delivered_.back(), message);
}

TEST_F(DtlsListenerTest, ALateCopyOfTheSessionsOwnClientHelloDoesNotReplaceIt) {
  start();
  DtlsTestClient client(server_.localAddress());
  ASSERT_TRUE(handshake(client));
  // The ClientHello that carried the cookie: the last epoch-0 handshake record the client sent.
  std::optional<Bytes> hello;
  for (const Bytes& d : received_) {
    if (d.size() > 13 && d[0] == 22 && d[3] == 0 && d[4] == 0 && d[13] == 1) hello = d;
  }
  ASSERT_TRUE(hello);
  Bytes copy = *hello;
  copy.resize(4096);
  EXPECT_EQ(listener_->receive(tupleFor(client.local()), copy, hello->size(),
                               std::chrono::steady_clock::now()),
            0u);
  sendOutput();
  EXPECT_EQ(listener_->stats().replaced, 0u);
  EXPECT_EQ(closed_, 0);
  const Bytes message = channelData(0x4003, 20, 0x22);
  ASSERT_TRUE(client.write(message));
  serve();
  ASSERT_FALSE(delivered_.empty());
  EXPECT_EQ(delivered_.back(), message);
}

TEST_F(DtlsListenerTest, AClientHelloWithoutCookieCostsOneDatagramAndNoState) {
  start();
  DtlsTestClient client(server_.localAddress());
  setNonBlocking(client.fd());
  (void)client.handshake();  // sends the first ClientHello
  uint8_t hello[2048];
  sockaddr_storage from;
  socklen_t len = sizeof from;
  const ssize_t n =
      ::recvfrom(server_.fd(), hello, sizeof hello, 0, reinterpret_cast<sockaddr*>(&from), &len);
  ASSERT_GT(n, 0);
  // The same ClientHello from 1,000 spoofed sources.
  for (uint16_t port = 20000; port < 21000; ++port) {
    uint8_t copy[2048];
    std::copy(hello, hello + n, copy);
    const auto spoofed = *TransportAddress::parse("127.0.0.2:" + std::to_string(port));
    EXPECT_EQ(listener_->receive(tupleFor(spoofed), std::span(copy, sizeof copy),
                                 static_cast<size_t>(n), std::chrono::steady_clock::now()),
              0u);
  }
  EXPECT_EQ(listener_->sessionCount(), 0u);
  EXPECT_EQ(listener_->stats().challenged, 1000u);
  size_t verify_requests = 0;
  listener_->forEachOutput([&](const FiveTuple&, std::span<const uint8_t> d) {
    // RFC 6347 §4.2.1: a handshake record (22) holding a HelloVerifyRequest (3).
    if (d.size() > 13 && d[0] == 22 && d[13] == 3) ++verify_requests;
  });
  EXPECT_EQ(verify_requests, 1000u);
  listener_->clearOutput();
}

TEST_F(DtlsListenerTest, DatagramsOfNoSessionThatAreNotClientHellosAreDropped) {
  start();
  uint8_t junk[64] = {23, 0xFE, 0xFD};  // application data record, no session
  EXPECT_EQ(listener_->receive(tupleFor(*TransportAddress::parse("127.0.0.1:4000")),
                               std::span(junk), sizeof junk, std::chrono::steady_clock::now()),
            0u);
  EXPECT_EQ(listener_->stats().dropped, 1u);
  EXPECT_FALSE(listener_->hasOutput());
}

TEST_F(DtlsListenerTest, SessionsBeyondTheCapAreRefused) {
  start({.max_sessions = 1});
  DtlsTestClient first(server_.localAddress());
  ASSERT_TRUE(handshake(first));
  DtlsTestClient second(server_.localAddress());
  EXPECT_FALSE(handshake(second));
  EXPECT_EQ(listener_->sessionCount(), 1u);
  EXPECT_GT(listener_->stats().refused, 0u);
}

TEST_F(DtlsListenerTest, ANewCertificateLeavesEstablishedSessionsAlone) {
  start();
  DtlsTestClient before(server_.localAddress());
  ASSERT_TRUE(handshake(before));
  listener_->setTlsContext(makeContext());
  DtlsTestClient after(server_.localAddress());
  ASSERT_TRUE(handshake(after)) << "a client challenged and served under the new context";
  const Bytes message = channelData(0x4002, 8, 1);
  ASSERT_TRUE(before.write(message));
  serve();
  ASSERT_EQ(delivered_.size(), 1u);
  EXPECT_EQ(delivered_[0], message);
  EXPECT_EQ(listener_->sessionCount(), 2u);
}

TEST_F(DtlsListenerTest, HandshakeAndIdleTimeoutsCloseSessions) {
  start({.idle_timeout = std::chrono::seconds(30), .handshake_timeout = std::chrono::seconds(5)});
  DtlsTestClient done(server_.localAddress());
  ASSERT_TRUE(handshake(done));
  // A client that answers the cookie challenge and then goes silent.
  DtlsTestClient stalled(server_.localAddress());
  setNonBlocking(stalled.fd());
  for (int i = 0; i < 20 && listener_->sessionCount() < 2; ++i) {
    (void)stalled.handshake();
    serve();
  }
  ASSERT_EQ(listener_->sessionCount(), 2u);
  const auto now = std::chrono::steady_clock::now();
  listener_->sweep(now + std::chrono::seconds(6));
  EXPECT_EQ(listener_->stats().closed_handshake, 1u);
  EXPECT_EQ(listener_->sessionCount(), 1u);
  listener_->sweep(now + std::chrono::seconds(31));
  EXPECT_EQ(listener_->stats().closed_idle, 1u);
  EXPECT_EQ(listener_->sessionCount(), 0u);
  EXPECT_EQ(closed_, 2);
}

}  // namespace
}  // namespace kturn::worker
