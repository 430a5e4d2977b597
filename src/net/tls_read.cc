#include "net/tls_read.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace kturn::net {

TlsReadResult readTls(SSL* ssl, std::span<uint8_t> into) {
  size_t n = 0;
  ERR_clear_error();
  if (SSL_read_ex(ssl, into.data(), into.size(), &n) == 1) return {TlsReadStatus::kData, n};
  switch (SSL_get_error(ssl, 0)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:  // never with the append-only sinks kturn writes to
      return {TlsReadStatus::kWouldBlock};
    case SSL_ERROR_ZERO_RETURN:
      return {TlsReadStatus::kClosed};
    default:
      // SSL_ERROR_SYSCALL (reset) or SSL_ERROR_SSL (bad record, handshake failure). Over DTLS a
      // record that fails to authenticate is dropped by OpenSSL without an error (RFC 6347
      // §4.1.2.7), so there this means the handshake itself failed.
      ERR_clear_error();
      return {TlsReadStatus::kFailed};
  }
}

}  // namespace kturn::net
