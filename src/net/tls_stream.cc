#include "net/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace kturn::net {
namespace {

// A sink BIO that appends to a std::vector<uint8_t> (its BIO data). OpenSSL's own memory BIO
// would add a buffer, and a copy, between the TLS records and the connection's output queue.
int appendWrite(BIO* bio, const char* data, size_t size, size_t* written) {
  auto* out = static_cast<std::vector<uint8_t>*>(BIO_get_data(bio));
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  out->insert(out->end(), bytes, bytes + size);
  *written = size;
  return 1;
}

long appendCtrl(BIO*, int cmd, long, void*) {
  // The record layer flushes after each flight; everything else (pending counts, dgram
  // controls) has no meaning for an append-only queue.
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int appendCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* appendMethod() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kturn append");
    BIO_meth_set_write_ex(m, appendWrite);
    BIO_meth_set_ctrl(m, appendCtrl);
    BIO_meth_set_create(m, appendCreate);
    return m;
  }();
  return method;
}

}  // namespace

TlsStream::TlsStream(const TlsContext& context, int fd, std::vector<uint8_t>& out)
    : ssl_(SSL_new(context.get())) {
  BIO* rbio = BIO_new_socket(fd, BIO_NOCLOSE);
  BIO* wbio = BIO_new(appendMethod());
  BIO_set_data(wbio, &out);
  SSL_set_bio(ssl_, rbio, wbio);  // the SSL owns both
  // Read ahead: one read(2) takes every record the socket holds (up to OpenSSL's buffer),
  // instead of two per record (header, then body). hasBuffered() then also covers records read
  // but not yet decrypted, so the listener keeps reading until they are all out.
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_accept_state(ssl_);
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::ReadResult TlsStream::read(std::span<uint8_t> into) {
  size_t n = 0;
  ERR_clear_error();
  if (SSL_read_ex(ssl_, into.data(), into.size(), &n) == 1) return {Status::kData, n};
  switch (SSL_get_error(ssl_, 0)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:  // never with an append-only sink, but harmless
      return {Status::kWouldBlock};
    case SSL_ERROR_ZERO_RETURN:
      return {Status::kClosed};
    default:
      // SSL_ERROR_SYSCALL (reset) or SSL_ERROR_SSL (bad record, handshake failure). The alert
      // OpenSSL queued, if any, is flushed by the caller before it closes.
      ERR_clear_error();
      return {Status::kFailed};
  }
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
