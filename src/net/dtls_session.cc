#include "net/dtls_session.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>

namespace kturn::net {

DtlsSession::DtlsSession(const TlsContext& context, DatagramQueue& out)
    : ssl_(SSL_new(context.get())) {
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(rbio, -1);  // empty means "wait for the next datagram", not EOF
  SSL_set_bio(ssl_, rbio, newSinkBio(out));
  SSL_set_options(ssl_, SSL_OP_NO_QUERY_MTU | SSL_OP_COOKIE_EXCHANGE);
  DTLS_set_link_mtu(ssl_, DatagramQueue::kLinkMtu);
  SSL_set_accept_state(ssl_);
}

DtlsSession::~DtlsSession() { SSL_free(ssl_); }

DtlsSession::ListenResult DtlsSession::listen(std::span<const uint8_t> datagram,
                                              std::span<const uint8_t> client) {
  (void)BIO_reset(SSL_get_rbio(ssl_));
  feed(datagram);
  const size_t n = std::min(client.size(), client_.size());
  std::copy_n(client.begin(), n, client_.begin());
  cookie_address_ = DtlsCookieAddress{std::span<const uint8_t>(client_).first(n)};
  SSL_set_app_data(ssl_, &cookie_address_);
  BIO_ADDR* peer = BIO_ADDR_new();
  ERR_clear_error();
  const int r = DTLSv1_listen(ssl_, peer);
  BIO_ADDR_free(peer);
  ERR_clear_error();
  if (r > 0) return ListenResult::kVerified;
  // 0: a HelloVerifyRequest went out, or the datagram was silently dropped; < 0: a fatal
  // error, after which this SSL may not listen again — the caller replaces the session.
  (void)BIO_reset(SSL_get_rbio(ssl_));
  return r == 0 ? ListenResult::kChallenged : ListenResult::kIgnored;
}

bool DtlsSession::accept() {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return true;
  const int e = SSL_get_error(ssl_, r);
  ERR_clear_error();
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

void DtlsSession::feed(std::span<const uint8_t> datagram) {
  BIO_write(SSL_get_rbio(ssl_), datagram.data(), static_cast<int>(datagram.size()));
}

DtlsSession::ReadResult DtlsSession::read(std::span<uint8_t> into) { return readTls(ssl_, into); }

bool DtlsSession::hasPending() const { return SSL_has_pending(ssl_) == 1; }

bool DtlsSession::write(std::span<const uint8_t> plaintext) {
  if (!established()) return false;
  size_t n = 0;
  ERR_clear_error();
  if (SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &n) == 1) return true;
  ERR_clear_error();
  return false;
}

void DtlsSession::onTimer() {
  if (!established()) (void)DTLSv1_handle_timeout(ssl_);
  ERR_clear_error();
}

void DtlsSession::shutdown() {
  if (established()) (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool DtlsSession::established() const { return SSL_is_init_finished(ssl_) == 1; }

bool DtlsSession::sameClientRandom(std::span<const uint8_t> client_hello) const {
  // Record header (13), handshake header (12), client_version (2), then the 32-byte random
  // (RFC 6347 §4.1, §4.2.2; RFC 5246 §7.4.1.2).
  constexpr size_t kRandomOffset = 13 + 12 + 2;
  constexpr size_t kRandomSize = 32;
  if (client_hello.size() < kRandomOffset + kRandomSize) return false;
  std::array<uint8_t, kRandomSize> random{};
  if (SSL_get_client_random(ssl_, random.data(), random.size()) != random.size()) return false;
  return std::equal(random.begin(), random.end(), client_hello.begin() + kRandomOffset);
}

}  // namespace kturn::net
