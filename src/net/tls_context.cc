#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cstring>
#include <string>

#include "common/crypto.h"
#include "common/openssl_ptr.h"

namespace kturn::net {
namespace {

using openssl::BioPtr;
using openssl::PkeyPtr;
using openssl::X509Ptr;
using CtxPtr = std::unique_ptr<SSL_CTX, openssl::Deleter<SSL_CTX_free>>;

// The newest OpenSSL error, for a message that says more than "failed".
std::string lastSslError() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

Error tlsError(const std::string& what) {
  return makeError(Error::Code::kInvalidArgument, what + ": " + lastSslError());
}

BioPtr readOnlyBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// RFC 7443: TURN's ALPN label. A client that offers it gets it; one that offers only other
// protocols is served without ALPN (TURN predates ALPN, most clients send none).
constexpr unsigned char kTurnAlpn[] = "stun.turn";

int selectAlpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
               unsigned int in_len, void*) {
  for (unsigned int i = 0; i < in_len;) {
    const unsigned int len = in[i];
    if (i + 1 + len > in_len) break;
    if (len == sizeof kTurnAlpn - 1 && std::memcmp(in + i + 1, kTurnAlpn, len) == 0) {
      *out = in + i + 1;
      *out_len = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// DTLS cookie callbacks: the client's address comes from the SSL's app data (set by the DTLS
// listener before it lets OpenSSL see a ClientHello), the secret from the context's.
int generateCookie(SSL* ssl, unsigned char* cookie, unsigned int* length) {
  const auto* self = static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  const auto* address = static_cast<const DtlsCookieAddress*>(SSL_get_app_data(ssl));
  if (self == nullptr || address == nullptr) return 0;
  std::array<uint8_t, TlsContext::kMaxCookie> out{};
  *length = static_cast<unsigned int>(self->cookieFor(address->bytes, out));
  std::memcpy(cookie, out.data(), *length);
  return 1;
}

int verifyCookie(SSL* ssl, const unsigned char* cookie, unsigned int length) {
  std::array<uint8_t, TlsContext::kMaxCookie> expected{};
  unsigned int expected_length = 0;
  if (generateCookie(ssl, expected.data(), &expected_length) != 1) return 0;
  return crypto::equalConstantTime({cookie, length}, {expected.data(), expected_length}) ? 1 : 0;
}

}  // namespace

TlsContext::TlsContext(SSL_CTX* ctx, TlsKind kind) : ctx_(ctx), kind_(kind) {
  crypto::randomBytes(cookie_secret_);
  SSL_CTX_set_app_data(ctx_, this);
}

TlsContext::~TlsContext() {
  // Connections made from this context may outlive it (SSL_CTX is reference counted): they must
  // no longer find this object through the app data.
  SSL_CTX_set_app_data(ctx_, nullptr);
  SSL_CTX_free(ctx_);
}

size_t TlsContext::cookieFor(std::span<const uint8_t> client_address,
                             std::span<uint8_t, kMaxCookie> out) const {
  const crypto::Sha256Digest mac = crypto::hmacSha256(cookie_secret_, {client_address});
  static_assert(sizeof mac == kMaxCookie);
  std::memcpy(out.data(), mac.data(), mac.size());
  return mac.size();
}

Result<TlsContextPtr> TlsContext::server(std::string_view cert_pem, std::string_view key_pem,
                                         TlsKind kind) {
  ERR_clear_error();
  CtxPtr ctx(SSL_CTX_new(kind == TlsKind::kTls ? TLS_server_method() : DTLS_server_method()));
  if (!ctx) return tlsError("TLS context");
  // TLS 1.2 and 1.3 (RFC 8656 §3.1 requires at least 1.2); DTLS 1.2 (DTLS 1.0 is obsolete).
  SSL_CTX_set_min_proto_version(ctx.get(),
                                kind == TlsKind::kTls ? TLS1_2_VERSION : DTLS1_2_VERSION);
  // No renegotiation (a CPU-exhaustion vector, unused by TURN clients); no compression.
  SSL_CTX_set_options(
      ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // SSL_MODE_RELEASE_BUFFERS is set per connection, and only while it handshakes (TlsStream):
  // for an established connection it would free and reallocate the record buffers around
  // every record, an allocation per packet.
  // A client that drops the connection without close_notify is an ordinary close for TURN.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_alpn_select_cb(ctx.get(), selectAlpn, nullptr);
  if (kind == TlsKind::kDtls) {
    SSL_CTX_set_cookie_generate_cb(ctx.get(), generateCookie);
    SSL_CTX_set_cookie_verify_cb(ctx.get(), verifyCookie);
  }

  BioPtr cert_bio = readOnlyBio(cert_pem);
  X509Ptr leaf(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!leaf) return tlsError("cert: no PEM certificate");
  if (SSL_CTX_use_certificate(ctx.get(), leaf.get()) != 1) return tlsError("cert");
  // The rest of the file is the chain towards the CA.
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx.get(), extra) != 1) {
      X509_free(extra);
      return tlsError("cert: chain");
    }
  }
  ERR_clear_error();  // the loop above ends on a "no start line" error

  BioPtr key_bio = readOnlyBio(key_pem);
  PkeyPtr key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                      : nullptr);
  if (!key) return tlsError("key: no PEM private key");
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    return tlsError("key: does not match the certificate");
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) return tlsError("key");
  return TlsContextPtr(new TlsContext(ctx.release(), kind));
}

}  // namespace kturn::net
