// TlsContext: the server side of a TURN-TLS (RFC 8656 §3.1, TLS 1.2/1.3) or TURN-DTLS (DTLS 1.2)
// listener — an OpenSSL SSL_CTX built from the listener's PEM certificate chain and private key.
//
// Immutable once built and shared read-only: every worker's connections are made from the same
// context. A certificate change builds a new context; connections made from the old one keep it
// (each SSL holds a reference to its SSL_CTX), so rotating a certificate drops nothing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "kturn/result.h"

using SSL_CTX = struct ssl_ctx_st;

namespace kturn::net {

enum class TlsKind { kTls, kDtls };

class TlsContext {
 public:
  // `cert_pem`: the leaf certificate first, then any intermediates; `key_pem`: its private key
  // (RSA or EC, PKCS#8 or traditional). Errors say which of the two is wrong.
  static Result<std::shared_ptr<const TlsContext>> server(std::string_view cert_pem,
                                                          std::string_view key_pem, TlsKind kind);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  TlsKind kind() const { return kind_; }

  // DTLS cookies (RFC 6347 §4.2.1): an HMAC of the client's address under a per-context secret,
  // so a cookie proves the client receives at the address it claims without the server keeping
  // any state for it. Returns the cookie's length (at most kMaxCookie).
  static constexpr size_t kMaxCookie = 32;
  size_t cookieFor(std::span<const uint8_t> client_address,
                   std::span<uint8_t, kMaxCookie> out) const;

 private:
  TlsContext(SSL_CTX* ctx, TlsKind kind);
  SSL_CTX* ctx_;
  TlsKind kind_;
  std::array<uint8_t, 32> cookie_secret_{};
};

// What the DTLS cookie callbacks hash: the client's transport address as bytes. A DTLS listener
// points the SSL's app data (SSL_set_app_data) at one before OpenSSL reads a ClientHello.
struct DtlsCookieAddress {
  std::span<const uint8_t> bytes;
};

using TlsContextPtr = std::shared_ptr<const TlsContext>;

}  // namespace kturn::net
