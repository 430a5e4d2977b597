// Reading plaintext from an OpenSSL connection, TLS (TlsStream) or DTLS (DtlsSession): one call to
// SSL_read_ex and what SSL_get_error makes of a failure, with the error queue left empty.
#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace kturn::net {

enum class TlsReadStatus {
  kData,        // `bytes` of plaintext were read
  kWouldBlock,  // nothing more until more ciphertext arrives
  kClosed,      // the client closed (close_notify or EOF)
  kFailed,      // handshake failure, reset or a protocol error: close the connection
};

struct TlsReadResult {
  TlsReadStatus status;
  size_t bytes = 0;
};

// Drives the handshake first, so it may queue output (handshake flights, tickets). An alert
// OpenSSL queued on kFailed is the caller's to flush before it closes.
TlsReadResult readTls(SSL* ssl, std::span<uint8_t> into);

}  // namespace kturn::net
