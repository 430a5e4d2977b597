// A non-blocking OpenSSL TLS client for tests that run the server's event loop on the same
// thread: each step() advances the handshake or I/O as far as the socket allows, so a test
// alternates step() with the loop until what it waits for has happened.
#pragma once

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kturn::net::testing {

// DER of the first certificate in `pem`: what TlsTestClient::peerCertificate() returns for it.
inline std::vector<uint8_t> derOfPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x509 = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  unsigned char* p = nullptr;
  const int len = i2d_X509(x509, &p);
  std::vector<uint8_t> der(p, p + std::max(len, 0));
  OPENSSL_free(p);
  X509_free(x509);
  BIO_free(bio);
  return der;
}

class TlsTestClient {
 public:
  // `fd`: a connected TCP socket, made non-blocking here; the client owns it.
  explicit TlsTestClient(int fd) : fd_(fd) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);  // self-signed test certificates
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set_connect_state(ssl_);
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE);
    struct timeval tv {
      0, 1000
    };  // reads return within a millisecond
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~TlsTestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  TlsTestClient(const TlsTestClient&) = delete;
  TlsTestClient& operator=(const TlsTestClient&) = delete;

  // Advances the handshake; true once it is complete.
  bool handshake() {
    ERR_clear_error();
    return SSL_do_handshake(ssl_) == 1;
  }
  bool write(std::span<const uint8_t> bytes) {
    size_t n = 0;
    return SSL_write_ex(ssl_, bytes.data(), bytes.size(), &n) == 1 && n == bytes.size();
  }
  // Reads what has arrived (waits at most ~1 ms) and appends it to received().
  void poll() {
    uint8_t buf[4096];
    size_t n = 0;
    ERR_clear_error();
    while (SSL_read_ex(ssl_, buf, sizeof buf, &n) == 1)
      received_.insert(received_.end(), buf, buf + n);
    const int e = SSL_get_error(ssl_, 0);
    if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SSL ||
        (e == SSL_ERROR_SYSCALL && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closed_ = true;
    }
  }
  const std::vector<uint8_t>& received() const { return received_; }
  bool closed() const { return closed_; }
  // DER of the certificate the server presented.
  std::vector<uint8_t> peerCertificate() const {
    X509* cert = SSL_get1_peer_certificate(ssl_);
    std::vector<uint8_t> der;
    if (cert == nullptr) return der;
    unsigned char* p = nullptr;
    const int len = i2d_X509(cert, &p);
    if (len > 0) der.assign(p, p + len);
    OPENSSL_free(p);
    X509_free(cert);
    return der;
  }

 private:
  int fd_;
  SSL_CTX* ctx_;
  SSL* ssl_;
  std::vector<uint8_t> received_;
  bool closed_ = false;
};

}  // namespace kturn::net::testing
