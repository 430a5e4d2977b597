#include "net/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/sink_bio.h"

namespace kturn::net {

TlsStream::TlsStream(const TlsContext& context, int fd, std::vector<uint8_t>& out)
    : sink_(out), ssl_(SSL_new(context.get())) {
  BIO* rbio = BIO_new_socket(fd, BIO_NOCLOSE);
  SSL_set_bio(ssl_, rbio, newSinkBio(sink_));  // the SSL owns both
  // Read ahead: one read(2) takes every record the socket holds (up to OpenSSL's buffer),
  // instead of two per record (header, then body). hasBuffered() then also covers records read
  // but not yet decrypted, so the listener keeps reading until they are all out.
  SSL_set_read_ahead(ssl_, 1);
  // Until the handshake is done, OpenSSL frees its record buffers whenever they are empty: a
  // flood of connections that never finish a handshake then costs little memory each. Cleared
  // once established (see read()), so relayed packets do not pay an allocation each.
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  SSL_set_accept_state(ssl_);
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::ReadResult TlsStream::read(std::span<uint8_t> into) {
  const ReadResult result = readTls(ssl_, into);
  if (releasing_buffers_ && SSL_is_init_finished(ssl_) == 1) {
    SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
    releasing_buffers_ = false;
  }
  return result;
}

// SSL_has_pending, not SSL_pending: with read-ahead, whole records may wait undecrypted.
bool TlsStream::hasBuffered() const { return SSL_has_pending(ssl_) == 1; }

bool TlsStream::write(std::span<const uint8_t> plaintext) {
  size_t n = 0;
  ERR_clear_error();
  if (SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &n) == 1) return true;
  ERR_clear_error();
  return false;
}

void TlsStream::shutdown() {
  if (SSL_is_init_finished(ssl_)) (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool TlsStream::established() const { return SSL_is_init_finished(ssl_) == 1; }

uint64_t TlsStream::bytesRead() const { return BIO_number_read(SSL_get_rbio(ssl_)); }

std::string TlsStream::description() const {
  if (!established()) return "handshaking";
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

}  // namespace kturn::net
