// A client's TURN-TCP or TURN-TLS connection (RFC 8656 §3.1): a connected TCP socket,
// optionally wrapped in a client-side TLS session, with a fixed-size output queue and a
// fixed-size input buffer that frames what arrives (STUN messages and ChannelData padded to four
// bytes, stun/stream_framing.h). Both buffers are sized once, so the traffic loop never allocates:
// frames are written straight into the output queue, and received frames are handed out as
// spans into the input buffer.
//
// The connection is opened blocking (TCP connect and TLS handshake, bounded by a timeout) and
// then switched to non-blocking for the traffic. kturn-bench's simulated clients and kturnctl's
// TURN client (client/turn_client.h) both use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"

using SSL = struct ssl_st;
using SSL_CTX = struct ssl_ctx_st;

namespace kturn::client {

// How a client checks the server's certificate. Verification is on by default: the chain must end
// at a trusted CA (the system's, or `ca_file`) and name the host the client dialled (set per
// connection, see StreamConnection::open). `insecure` accepts any certificate, as turncat's
// --insecure and turnutils_uclient do, for self-signed test servers.
struct TlsVerification {
  bool insecure = false;
  std::string ca_file{};  // PEM; empty: the system's trust store
};

// The client side's SSL_CTX for TLS (1.2 or 1.3) or DTLS (1.2).
class ClientTlsContext {
 public:
  enum class Kind { kTls, kDtls };
  // `max_version`: TLS1_2_VERSION, TLS1_3_VERSION or 0 for the highest OpenSSL supports; ignored
  // for DTLS. Fails when `ca_file` cannot be read.
  static Result<std::unique_ptr<ClientTlsContext>> make(Kind kind, int max_version,
                                                        const TlsVerification& verification);
  ~ClientTlsContext();
  ClientTlsContext(const ClientTlsContext&) = delete;
  ClientTlsContext& operator=(const ClientTlsContext&) = delete;
  SSL_CTX* get() const { return ctx_; }
  bool verifies() const { return verifies_; }

  // Makes an SSL for a connection to `server_name` (a DNS name or an IP literal, as dialled):
  // sets SNI for a name and the name or address the certificate must carry when verifying.
  Result<SSL*> newSession(const std::string& server_name) const;

 private:
  ClientTlsContext(SSL_CTX* ctx, bool verifies) : ctx_(ctx), verifies_(verifies) {}
  SSL_CTX* ctx_;
  bool verifies_;
};

// The last OpenSSL error (or errno) as "what: reason"; clears OpenSSL's error queue.
std::string sslError(const char* what);
// Why a handshake failed: the certificate check's verdict when that failed, else sslError().
std::string handshakeError(SSL* ssl);

class StreamConnection {
 public:
  static constexpr size_t kOutputCapacity = 64 * 1024;
  static constexpr size_t kInputCapacity = 64 * 1024;

  // Connects from `bind` (port 0) to `server`; with `tls`, completes a TLS handshake with
  // `server_name` (empty: the server's address) as SNI and verified name. Both steps together
  // are bounded by `timeout_ms`.
  static Result<std::unique_ptr<StreamConnection>> open(const TransportAddress& server,
                                                        const IpAddress& bind,
                                                        const ClientTlsContext* tls, int timeout_ms,
                                                        const std::string& server_name = {});
  ~StreamConnection();
  StreamConnection(const StreamConnection&) = delete;
  StreamConnection& operator=(const StreamConnection&) = delete;

  int fd() const { return fd_; }
  bool failed() const { return failed_; }

  // Room left in the output queue; append() copies into it (the caller checks the room first).
  size_t room() const { return kOutputCapacity - out_used_; }
  void append(std::span<const uint8_t> bytes);
  // Appends zero bytes up to the next multiple of four of `message_size` (RFC 8656 §12.5).
  void pad(size_t message_size);
  bool hasOutput() const { return out_head_ < out_used_; }
  // Writes queued output until done or the socket would block. False once the connection failed.
  bool flush();

  // Receiving: readMore() appends what the socket has to the input buffer (1: read something,
  // 0: nothing for now, -1: the server closed, the read failed or the buffer is full of one
  // unframeable message); nextFrame() then hands out complete frames one by one (the message
  // without its padding, valid until compact()); compact() drops the frames handed out.
  int readMore();
  std::optional<std::span<const uint8_t>> nextFrame();
  void compact();
  // TLS holds decrypted bytes that readMore() returns without the socket becoming readable.
  bool hasBuffered() const;

  // "TLSv1.3 TLS_AES_256_GCM_SHA384" once a TLS handshake completed, else empty.
  std::string tlsDescription() const;

 private:
  StreamConnection(int fd, SSL* ssl);
  // > 0 bytes moved, 0 when the socket would block, -1 on close or error.
  ssize_t readSome(uint8_t* into, size_t size);
  ssize_t writeSome(const uint8_t* data, size_t size);

  int fd_;
  SSL* ssl_;
  bool failed_ = false;
  std::unique_ptr<uint8_t[]> out_;
  size_t out_head_ = 0;
  size_t out_used_ = 0;
  std::unique_ptr<uint8_t[]> in_;
  size_t in_used_ = 0;
  size_t in_head_ = 0;  // frames before this were handed out
};

}  // namespace kturn::client
