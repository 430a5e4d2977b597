// ServerLink: a client's connection to one TURN server over the transport its URI names
// (RFC 7065): UDP, TCP, TLS over TCP, or DTLS over UDP (RFC 8656 §3.1). It carries whole
// messages, STUN messages and ChannelData alike: one per datagram on UDP and DTLS, framed and
// padded to four bytes on TCP and TLS (RFC 8656 §12.5).
//
// Opening is blocking and bounded (connect, TLS or DTLS handshake); afterwards the socket is
// non-blocking and the owner polls fd() and calls receive() when it is readable (or when
// hasBuffered() says a TLS session holds decrypted bytes the socket no longer signals).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "client/stream_connection.h"
#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::client {

enum class LinkTransport { kUdp, kTcp, kTls, kDtls };

std::string_view linkTransportName(LinkTransport transport);  // "udp", "tcp", "tls", "dtls"

struct LinkOptions {
  // The host as the user wrote it: the TLS/DTLS server name (SNI) and the name or address the
  // server's certificate must carry. Empty: the server's IP address.
  std::string server_name{};
  TlsVerification tls{};
  int timeout_ms = 5000;  // connect and handshake together
};

class ServerLink {
 public:
  using MessageHandler = std::function<void(std::span<const uint8_t>)>;

  static Result<std::unique_ptr<ServerLink>> open(const TransportAddress& server,
                                                  LinkTransport transport,
                                                  const LinkOptions& options);
  virtual ~ServerLink() = default;
  ServerLink(const ServerLink&) = delete;
  ServerLink& operator=(const ServerLink&) = delete;

  LinkTransport transport() const { return transport_; }
  // TCP and TLS deliver or fail: requests are not retransmitted (RFC 8489 §6.2.2).
  bool reliable() const {
    return transport_ == LinkTransport::kTcp || transport_ == LinkTransport::kTls;
  }
  const TransportAddress& server() const { return server_; }
  // The client's side of the 5-tuple.
  const TransportAddress& local() const { return local_; }

  virtual int fd() const = 0;
  // Sends one message. On UDP and DTLS a full socket buffer loses it (kExhausted), as any
  // datagram; on streams it is queued and the call waits, within the open timeout, for room.
  virtual Result<void> send(std::span<const uint8_t> message) = 0;
  // Reads everything that arrived, without blocking, and hands each whole message to `handler`
  // (valid during the call only). Fails once the server closed the connection or the stream
  // carries something that is not STUN or ChannelData.
  virtual Result<void> receive(const MessageHandler& handler) = 0;
  virtual bool hasBuffered() const { return false; }
  // "TLSv1.3 TLS_AES_256_GCM_SHA384" for TLS and DTLS links, else empty.
  virtual std::string securityDescription() const { return {}; }

 protected:
  ServerLink(LinkTransport transport, const TransportAddress& server)
      : transport_(transport), server_(server) {}
  TransportAddress local_{};

 private:
  LinkTransport transport_;
  TransportAddress server_;
};

}  // namespace kturn::client
