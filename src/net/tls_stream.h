// TlsStream: the server end of one TLS connection over a non-blocking TCP socket, for TURN-TLS
// listeners (RFC 8656 §3.1).
//
// Records are read straight from the socket; everything OpenSSL writes (handshake messages,
// alerts, session tickets, encrypted application data) is appended to a caller-owned byte queue
// instead, which the stream listener writes out with its usual bounded, non-blocking writes. So a
// TLS connection differs from a plain TCP one only in how bytes are read and queued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "net/sink_bio.h"
#include "net/tls_context.h"
#include "net/tls_read.h"

using SSL = struct ssl_st;

namespace kturn::net {

class TlsStream {
 public:
  // `out`: where ciphertext goes; it must outlive the stream.
  TlsStream(const TlsContext& context, int fd, std::vector<uint8_t>& out);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  using Status = TlsReadStatus;
  using ReadResult = TlsReadResult;
  // Reads plaintext, driving the handshake first. May queue output (handshake flights, tickets).
  ReadResult read(std::span<uint8_t> into);
  // Bytes buffered inside OpenSSL (plaintext, or records read ahead from the socket) that
  // read() returns without the socket becoming readable again; while true, keep reading even
  // when the socket has nothing more.
  bool hasBuffered() const;
  // Encrypts `plaintext` onto the output queue. False once the connection failed.
  bool write(std::span<const uint8_t> plaintext);
  // Queues a close_notify alert.
  void shutdown();

  bool established() const;
  // Wire bytes read from the socket so far (records, not plaintext).
  uint64_t bytesRead() const;
  // The TLS version and cipher suite, once established ("TLSv1.3 TLS_AES_128_GCM_SHA256").
  std::string description() const;

 private:
  // Appends the records OpenSSL writes to the connection's output queue.
  class QueueSink final : public BioSink {
   public:
    explicit QueueSink(std::vector<uint8_t>& out) : out_(out) {}
    void write(std::span<const uint8_t> bytes) override {
      out_.insert(out_.end(), bytes.begin(), bytes.end());
    }

   private:
    std::vector<uint8_t>& out_;
  };

  QueueSink sink_;  // outlives ssl_, which is freed in the destructor's body
  SSL* ssl_;
  bool releasing_buffers_ = true;  // SSL_MODE_RELEASE_BUFFERS, on until the handshake is done
};

}  // namespace kturn::net
