#include "client/stream_connection.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/sockaddr.h"
#include "stun/stream_framing.h"

namespace kturn::client {

std::string sslError(const char* what) {
  char buf[256];
  const unsigned long e = ERR_get_error();
  if (e == 0) return std::string(what) + ": " + std::strerror(errno);
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return std::string(what) + ": " + buf;
}

namespace {

Error ioError(const char* what, int err) {
  return Error{Error::Code::kIo, std::string(what) + ": " + std::strerror(err)};
}

}  // namespace

std::string handshakeError(SSL* ssl) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return std::string("server certificate not accepted: ") + X509_verify_cert_error_string(verify);
  }
  return sslError("handshake");
}

Result<std::unique_ptr<ClientTlsContext>> ClientTlsContext::make(
    Kind kind, int max_version, const TlsVerification& verification) {
  SSL_CTX* ctx = SSL_CTX_new(kind == Kind::kTls ? TLS_client_method() : DTLS_client_method());
  if (ctx == nullptr) return makeError(Error::Code::kIo, sslError("SSL_CTX_new"));
  std::unique_ptr<ClientTlsContext> owner(new ClientTlsContext(ctx, !verification.insecure));
  if (kind == Kind::kTls) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, max_version);
  } else {
    SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
  }
  if (verification.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const bool loaded =
        verification.ca_file.empty()
            ? SSL_CTX_set_default_verify_paths(ctx) == 1
            : SSL_CTX_load_verify_locations(ctx, verification.ca_file.c_str(), nullptr) == 1;
    if (!loaded) {
      return makeError(
          Error::Code::kInvalidArgument,
          sslError(verification.ca_file.empty() ? "the system's trust store"
                                                : ("CA file " + verification.ca_file).c_str()));
    }
  }
  // Partial writes: a non-blocking socket takes what it can and the rest stays queued, and the
  // retry may come from a moved buffer (the queue compacts).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read ahead: one read(2) takes every record the socket holds, instead of two per record
  // (header, then body); the bench's generator must stay cheaper than the servers it measures.
  // A DTLS read always takes one whole datagram.
  if (kind == Kind::kTls) SSL_CTX_set_read_ahead(ctx, 1);
  return owner;
}

Result<SSL*> ClientTlsContext::newSession(const std::string& server_name) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return makeError(Error::Code::kIo, sslError("SSL_new"));
  const bool is_ip = IpAddress::parse(server_name).has_value();
  // SNI carries names only (RFC 6066 §3).
  if (!server_name.empty() && !is_ip) SSL_set_tlsext_host_name(ssl, server_name.c_str());
  if (verifies_ && !server_name.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), 0);
    if (ok != 1) {
      SSL_free(ssl);
      return makeError(Error::Code::kInvalidArgument, sslError("server name to verify"));
    }
  }
  return ssl;
}

ClientTlsContext::~ClientTlsContext() { SSL_CTX_free(ctx_); }

Result<std::unique_ptr<StreamConnection>> StreamConnection::open(const TransportAddress& server,
                                                                 const IpAddress& bind,
                                                                 const ClientTlsContext* tls,
                                                                 int timeout_ms,
                                                                 const std::string& server_name) {
  const int fd =
      ::socket(server.ip.isV4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return ioError("socket", errno);
  std::unique_ptr<StreamConnection> c(new StreamConnection(fd, nullptr));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // The blocking connect and handshake give up after the timeout.
  const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_storage ss;
  socklen_t len = net::toSockaddr(TransportAddress{bind, 0}, ss);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    return ioError("bind", errno);
  }
  len = net::toSockaddr(server, ss);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    return ioError("connect", errno);
  }
  if (tls != nullptr) {
    auto ssl = tls->newSession(server_name.empty() ? server.ip.toString() : server_name);
    if (!ssl) return ssl.error();
    c->ssl_ = *ssl;
    if (SSL_set_fd(c->ssl_, fd) != 1) return makeError(Error::Code::kIo, sslError("SSL_set_fd"));
    if (SSL_connect(c->ssl_) != 1) return makeError(Error::Code::kIo, handshakeError(c->ssl_));
  }
  const timeval none{0, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return c;
}

StreamConnection::StreamConnection(int fd, SSL* ssl)
    : fd_(fd),
      ssl_(ssl),
      out_(std::make_unique<uint8_t[]>(kOutputCapacity)),
      in_(std::make_unique<uint8_t[]>(kInputCapacity)) {}

StreamConnection::~StreamConnection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

void StreamConnection::append(std::span<const uint8_t> bytes) {
  std::memcpy(out_.get() + out_used_, bytes.data(), bytes.size());
  out_used_ += bytes.size();
}

void StreamConnection::pad(size_t message_size) {
  const size_t n = (4 - message_size % 4) % 4;
  std::memset(out_.get() + out_used_, 0, n);
  out_used_ += n;
}

ssize_t StreamConnection::writeSome(const uint8_t* data, size_t size) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, data, static_cast<int>(size));
    if (n > 0) return n;
    const int e = SSL_get_error(ssl_, n);
    return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? 0 : -1;
  }
  for (;;) {
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

bool StreamConnection::flush() {
  while (!failed_ && out_head_ < out_used_) {
    const ssize_t n = writeSome(out_.get() + out_head_, out_used_ - out_head_);
    if (n < 0) failed_ = true;
    if (n <= 0) break;
    out_head_ += static_cast<size_t>(n);
  }
  if (out_head_ == out_used_) {
    out_head_ = out_used_ = 0;
  } else if (out_head_ > kOutputCapacity / 2) {
    // Keep room at the end for the next frames (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER allows it).
    std::memmove(out_.get(), out_.get() + out_head_, out_used_ - out_head_);
    out_used_ -= out_head_;
    out_head_ = 0;
  }
  return !failed_;
}

ssize_t StreamConnection::readSome(uint8_t* into, size_t size) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, into, static_cast<int>(size));
    if (n > 0) return n;
    const int e = SSL_get_error(ssl_, n);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
  }
  for (;;) {
    const ssize_t n = ::read(fd_, into, size);
    if (n > 0) return n;
    if (n == 0) return -1;  // the server closed
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

int StreamConnection::readMore() {
  if (failed_) return -1;
  if (in_used_ == kInputCapacity) compact();
  bool got = false;
  while (in_used_ < kInputCapacity) {
    const ssize_t n = readSome(in_.get() + in_used_, kInputCapacity - in_used_);
    if (n < 0) {
      failed_ = true;
      return -1;
    }
    if (n == 0) break;
    in_used_ += static_cast<size_t>(n);
    got = true;
  }
  if (!got && in_used_ == kInputCapacity) {
    failed_ = true;  // a full buffer without one whole frame in it: not our traffic
    return -1;
  }
  return got ? 1 : 0;
}

// SSL_has_pending, not SSL_pending: with read-ahead, whole records may wait unprocessed.
bool StreamConnection::hasBuffered() const { return ssl_ != nullptr && SSL_has_pending(ssl_) == 1; }

std::optional<std::span<const uint8_t>> StreamConnection::nextFrame() {
  const std::span<const uint8_t> rest(in_.get() + in_head_, in_used_ - in_head_);
  const stun::StreamFrame f = stun::nextStreamFrame(rest);
  switch (f.kind) {
    case stun::StreamFrame::Kind::kStun:
    case stun::StreamFrame::Kind::kChannelData:
      in_head_ += f.frame_size;
      return rest.first(f.message_size);
    case stun::StreamFrame::Kind::kInvalid:
      failed_ = true;
      return std::nullopt;
    case stun::StreamFrame::Kind::kIncomplete:
      return std::nullopt;
  }
  return std::nullopt;
}

void StreamConnection::compact() {
  if (in_head_ == 0) return;
  std::memmove(in_.get(), in_.get() + in_head_, in_used_ - in_head_);
  in_used_ -= in_head_;
  in_head_ = 0;
}

std::string StreamConnection::tlsDescription() const {
  if (ssl_ == nullptr) return {};
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

}  // namespace kturn::client
