// DtlsSession: the server end of one DTLS 1.2 association (RFC 6347) for TURN-DTLS listeners
// (RFC 8656 §3.1), driven by datagrams the listener hands it — no socket of its own, since every
// client of a listener shares the listener's UDP socket.
//
// A new client first meets a session in listening state (listen()): OpenSSL's stateless
// DTLSv1_listen answers a ClientHello without a valid cookie with a HelloVerifyRequest and keeps
// nothing, so spoofed sources cost the server one datagram and no memory. Only a ClientHello that
// returns the cookie (proving the client receives at its address) makes the session the
// client's, and the handshake goes on.
//
// Everything OpenSSL sends is appended to a shared DatagramQueue with its boundaries kept.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "net/sink_bio.h"
#include "net/tls_context.h"
#include "net/tls_read.h"

using SSL = struct ssl_st;

namespace kturn::net {

// Outgoing datagrams, back to back in `bytes`; `ends[i]` is where datagram i ends. The sessions'
// BIOs write into it, each write one datagram.
struct DatagramQueue final : BioSink {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> ends;
  void clear() {
    bytes.clear();
    ends.clear();
  }
  void write(std::span<const uint8_t> datagram) override {
    bytes.insert(bytes.end(), datagram.begin(), datagram.end());
    ends.push_back(static_cast<uint32_t>(bytes.size()));
  }
  // RFC 8656 §3.1 leaves the MTU to the path; 1200 bytes of DTLS datagram fit every path a
  // WebRTC client uses (the figure ICE and QUIC assume too); handshake flights are cut to it.
  static constexpr long kLinkMtu = 1200;
  long datagramMtu() const override { return kLinkMtu; }
};

class DtlsSession {
 public:
  // `out` must outlive the session.
  DtlsSession(const TlsContext& context, DatagramQueue& out);
  ~DtlsSession();
  DtlsSession(const DtlsSession&) = delete;
  DtlsSession& operator=(const DtlsSession&) = delete;

  enum class ListenResult {
    kVerified,    // the ClientHello carried a valid cookie: the handshake continues with accept()
    kChallenged,  // a HelloVerifyRequest was queued; nothing is kept
    kIgnored,     // not a usable ClientHello
  };
  // `client`: the client's address as bytes (what the cookie is bound to).
  ListenResult listen(std::span<const uint8_t> datagram, std::span<const uint8_t> client);
  // After kVerified: processes the buffered ClientHello and queues the server's flight.
  bool accept();

  using Status = TlsReadStatus;
  using ReadResult = TlsReadResult;
  // Feeds one datagram from the client.
  void feed(std::span<const uint8_t> datagram);
  // The next application record of what was fed, decrypted into `into`; kWouldBlock when the
  // datagram is used up. Drives the handshake, which may queue datagrams.
  ReadResult read(std::span<uint8_t> into);
  // Whether the datagram fed last holds more records than read() returned so far.
  bool hasPending() const;
  // Encrypts one application datagram onto the queue. False unless established.
  bool write(std::span<const uint8_t> plaintext);
  // Handshake retransmission (RFC 6347 §4.2.4): call periodically while not established.
  void onTimer();
  void shutdown();

  bool established() const;
  // Whether `client_hello` (a datagram isInitialClientHello would accept) carries the client
  // random this session's handshake used: a late copy of that handshake's ClientHello, not a
  // new one.
  bool sameClientRandom(std::span<const uint8_t> client_hello) const;

 private:
  SSL* ssl_;
  // The address the cookie is bound to, for the cookie callbacks (SSL app data): checked by
  // DTLSv1_listen and once more when accept() processes the ClientHello.
  std::array<uint8_t, 18> client_{};
  DtlsCookieAddress cookie_address_{};
};

}  // namespace kturn::net
