#include "client/server_link.h"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "net/sockaddr.h"

namespace kturn::client {
namespace {

using Clock = std::chrono::steady_clock;

// Datagrams up to the largest UDP payload: a TURN message or ChannelData never needs more.
constexpr size_t kMaxDatagram = 65536;

Error ioError(std::string what, int err) {
  return makeError(Error::Code::kIo, what + ": " + std::strerror(err));
}

int remainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// A non-blocking UDP socket connected to `server`: the kernel filters other sources and reports
// ICMP errors (ECONNREFUSED) for it.
Result<int> connectedUdpSocket(const TransportAddress& server) {
  const int fd = ::socket(server.ip.isV4() ? AF_INET : AF_INET6,
                          SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) return ioError("socket", errno);
  sockaddr_storage ss;
  const socklen_t len = net::toSockaddr(server, ss);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    ::close(fd);
    return ioError("connect to " + server.toString(), err);
  }
  return fd;
}

class UdpLink final : public ServerLink {
 public:
  UdpLink(const TransportAddress& server, int fd)
      : ServerLink(LinkTransport::kUdp, server), fd_(fd), buffer_(new uint8_t[kMaxDatagram]) {
    if (auto local = net::localAddress(fd)) local_ = *local;
  }
  ~UdpLink() override { ::close(fd_); }

  int fd() const override { return fd_; }

  Result<void> send(std::span<const uint8_t> message) override {
    for (;;) {
      if (::send(fd_, message.data(), message.size(), 0) >= 0) return {};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return makeError(Error::Code::kExhausted, "send: socket buffer full, datagram dropped");
      }
      return ioError("send to " + server().toString(), errno);
    }
  }

  Result<void> receive(const MessageHandler& handler) override {
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer_.get(), kMaxDatagram, 0);
      if (n >= 0) {
        handler({buffer_.get(), static_cast<size_t>(n)});
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      return ioError("receive from " + server().toString(), errno);
    }
  }

 private:
  int fd_;
  std::unique_ptr<uint8_t[]> buffer_;
};

class StreamLink final : public ServerLink {
 public:
  StreamLink(LinkTransport transport, const TransportAddress& server,
             std::unique_ptr<ClientTlsContext> tls, std::unique_ptr<StreamConnection> connection,
             int timeout_ms)
      : ServerLink(transport, server),
        tls_(std::move(tls)),
        connection_(std::move(connection)),
        timeout_ms_(timeout_ms) {
    if (auto local = net::localAddress(connection_->fd())) local_ = *local;
  }

  int fd() const override { return connection_->fd(); }

  Result<void> send(std::span<const uint8_t> message) override {
    const size_t padded = (message.size() + 3) & ~size_t{3};
    if (padded > StreamConnection::kOutputCapacity) {
      return makeError(Error::Code::kTooLong, "message larger than the output queue");
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    while (connection_->room() < padded) {
      if (!connection_->flush()) return closed();
      if (connection_->room() >= padded) break;
      pollfd p{connection_->fd(), POLLOUT, 0};
      if (::poll(&p, 1, remainingMs(deadline)) == 0) {
        return makeError(Error::Code::kExhausted, "send: the server does not read");
      }
    }
    connection_->append(message);
    connection_->pad(message.size());
    if (!connection_->flush()) return closed();
    return {};
  }

  Result<void> receive(const MessageHandler& handler) override {
    // Queued output goes out whenever the link is serviced.
    if (connection_->hasOutput() && !connection_->flush()) return closed();
    for (;;) {
      const int got = connection_->readMore();
      while (auto frame = connection_->nextFrame()) handler(*frame);
      if (connection_->failed()) return closed();
      connection_->compact();
      if (got <= 0 && !connection_->hasBuffered()) return {};
    }
  }

  bool hasBuffered() const override { return connection_->hasBuffered(); }
  std::string securityDescription() const override { return connection_->tlsDescription(); }

 private:
  Error closed() const {
    return makeError(Error::Code::kIo,
                     "the connection to " + server().toString() + " was closed or broke");
  }

  std::unique_ptr<ClientTlsContext> tls_;  // outlives the connection's SSL
  std::unique_ptr<StreamConnection> connection_;
  int timeout_ms_;
};

class DtlsLink final : public ServerLink {
 public:
  static Result<std::unique_ptr<ServerLink>> open(const TransportAddress& server,
                                                  const LinkOptions& options) {
    auto ctx = ClientTlsContext::make(ClientTlsContext::Kind::kDtls, 0, options.tls);
    if (!ctx) return ctx.error();
    auto fd = connectedUdpSocket(server);
    if (!fd) return fd.error();
    auto ssl = (*ctx)->newSession(options.server_name.empty() ? server.ip.toString()
                                                              : options.server_name);
    if (!ssl) {
      ::close(*fd);
      return ssl.error();
    }
    std::unique_ptr<DtlsLink> link(new DtlsLink(server, *fd, std::move(*ctx), *ssl));
    if (auto r = link->handshake(options.timeout_ms); !r) return r.error();
    return std::unique_ptr<ServerLink>(std::move(link));
  }

  ~DtlsLink() override {
    SSL_shutdown(ssl_);  // one close_notify, best effort: the socket is non-blocking
    SSL_free(ssl_);
    ::close(fd_);
  }

  int fd() const override { return fd_; }

  Result<void> send(std::span<const uint8_t> message) override {
    ERR_clear_error();
    const int n = SSL_write(ssl_, message.data(), static_cast<int>(message.size()));
    if (n > 0) return {};
    const int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
      return makeError(Error::Code::kExhausted, "send: socket buffer full, record dropped");
    }
    return makeError(Error::Code::kIo, sslError("DTLS send"));
  }

  Result<void> receive(const MessageHandler& handler) override {
    for (;;) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buffer_.get(), static_cast<int>(kMaxDatagram));
      if (n > 0) {
        handler({buffer_.get(), static_cast<size_t>(n)});
        continue;
      }
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return {};
      if (e == SSL_ERROR_ZERO_RETURN) {
        return makeError(Error::Code::kIo, "the server closed the DTLS session");
      }
      if (e == SSL_ERROR_SYSCALL && errno != 0) {
        return ioError("receive from " + server().toString(), errno);
      }
      return makeError(Error::Code::kIo, sslError("DTLS receive"));
    }
  }

  bool hasBuffered() const override { return SSL_has_pending(ssl_) == 1; }
  std::string securityDescription() const override {
    return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
  }

 private:
  DtlsLink(const TransportAddress& server, int fd, std::unique_ptr<ClientTlsContext> ctx, SSL* ssl)
      : ServerLink(LinkTransport::kDtls, server),
        fd_(fd),
        ctx_(std::move(ctx)),
        ssl_(ssl),
        buffer_(new uint8_t[kMaxDatagram]) {
    if (auto local = net::localAddress(fd)) local_ = *local;
    BIO* bio = BIO_new_dgram(fd_, BIO_NOCLOSE);
    sockaddr_storage ss;
    net::toSockaddr(server, ss);
    BIO_ctrl(bio, BIO_CTRL_DGRAM_SET_CONNECTED, 0, &ss);
    SSL_set_bio(ssl_, bio, bio);
  }

  // The handshake on the non-blocking socket: OpenSSL's retransmission timer (RFC 6347 §4.2.4)
  // is run from here, between polls, until the handshake completes or the deadline passes.
  Result<void> handshake(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      ERR_clear_error();
      const int r = SSL_connect(ssl_);
      if (r == 1) return {};
      const int e = SSL_get_error(ssl_, r);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        return makeError(Error::Code::kIo, "DTLS " + handshakeError(ssl_));
      }
      int wait_ms = remainingMs(deadline);
      if (wait_ms == 0) {
        return makeError(Error::Code::kIo, "DTLS handshake with " + server().toString() +
                                               ": no answer within " + std::to_string(timeout_ms) +
                                               " ms");
      }
      timeval retransmit{};
      if (DTLSv1_get_timeout(ssl_, &retransmit) == 1) {
        const int ms = static_cast<int>(retransmit.tv_sec * 1000 + retransmit.tv_usec / 1000);
        wait_ms = std::min(wait_ms, ms);
      }
      pollfd p{fd_, static_cast<short>(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN), 0};
      if (::poll(&p, 1, wait_ms) == 0) DTLSv1_handle_timeout(ssl_);
    }
  }

  int fd_;
  std::unique_ptr<ClientTlsContext> ctx_;
  SSL* ssl_;
  std::unique_ptr<uint8_t[]> buffer_;
};

}  // namespace

std::string_view linkTransportName(LinkTransport transport) {
  switch (transport) {
    case LinkTransport::kUdp:
      return "udp";
    case LinkTransport::kTcp:
      return "tcp";
    case LinkTransport::kTls:
      return "tls";
    case LinkTransport::kDtls:
      return "dtls";
  }
  return "?";
}

Result<std::unique_ptr<ServerLink>> ServerLink::open(const TransportAddress& server,
                                                     LinkTransport transport,
                                                     const LinkOptions& options) {
  switch (transport) {
    case LinkTransport::kUdp: {
      auto fd = connectedUdpSocket(server);
      if (!fd) return fd.error();
      return std::unique_ptr<ServerLink>(new UdpLink(server, *fd));
    }
    case LinkTransport::kTcp:
    case LinkTransport::kTls: {
      std::unique_ptr<ClientTlsContext> tls;
      if (transport == LinkTransport::kTls) {
        auto ctx = ClientTlsContext::make(ClientTlsContext::Kind::kTls, 0, options.tls);
        if (!ctx) return ctx.error();
        tls = std::move(*ctx);
      }
      const IpAddress any = server.ip.isV4() ? IpAddress() : *IpAddress::parse("::");
      auto connection =
          StreamConnection::open(server, any, tls.get(), options.timeout_ms, options.server_name);
      if (!connection) return connection.error();
      return std::unique_ptr<ServerLink>(new StreamLink(
          transport, server, std::move(tls), std::move(*connection), options.timeout_ms));
    }
    case LinkTransport::kDtls:
      return DtlsLink::open(server, options);
  }
  return makeError(Error::Code::kInvalidArgument, "unknown transport");
}

}  // namespace kturn::client
