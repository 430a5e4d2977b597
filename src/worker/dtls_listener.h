// TURN over DTLS for one listener on one worker (RFC 8656 §3.1): the DTLS associations of the
// clients that reach the worker's SO_REUSEPORT UDP socket for this listener. The worker still
// does the socket I/O in batches; this class turns received datagrams into the TURN messages
// inside them and TURN messages into datagrams to send.
//
// New clients pass a stateless cookie exchange first (net::DtlsSession::listen), so a flood of
// spoofed ClientHellos allocates nothing. A client that restarts on the same address (a new
// ClientHello, epoch 0, to an established session) passes it too, and only then replaces its old
// session (RFC 6347 §4.2.8), so a spoofed ClientHello cannot end someone's session. Limits per
// worker: a session cap, a handshake timeout and an idle timeout for sessions that hold no
// allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kturn/transport_address.h"
#include "net/dtls_session.h"
#include "net/tls_context.h"
#include "turn/time.h"

namespace kturn::worker {

struct DtlsListenerStats {
  uint64_t challenged = 0;        // HelloVerifyRequests sent (no state kept)
  uint64_t accepted = 0;          // sessions created after a valid cookie
  uint64_t refused = 0;           // over max_sessions
  uint64_t closed_handshake = 0;  // no handshake within the timeout
  uint64_t closed_idle = 0;       // idle, without allocation
  uint64_t failures = 0;          // handshake or protocol failures
  uint64_t dropped = 0;           // datagrams of no session that were not a ClientHello
  uint64_t replaced = 0;          // sessions whose client restarted from the same address
};

class DtlsListener {
 public:
  struct Limits {
    size_t max_sessions = 8192;  // per worker
    std::chrono::seconds idle_timeout{30};
    std::chrono::seconds handshake_timeout{10};
    size_t max_output_bytes = 1 << 20;  // queued ciphertext between two drains
  };
  struct Callbacks {
    // The session is gone (close_notify, failure or a limit).
    std::function<void(const FiveTuple&)> on_closed;
    std::function<bool(const FiveTuple&)> has_allocation;
  };

  DtlsListener(net::TlsContextPtr context, const Limits& limits, Callbacks callbacks);
  ~DtlsListener();
  DtlsListener(const DtlsListener&) = delete;
  DtlsListener& operator=(const DtlsListener&) = delete;

  // One datagram from `client`, `buffer[0, length)`. Returns the size of the first TURN message
  // inside it, decrypted in place at the start of `buffer` (0 if none: a handshake step, a
  // dropped datagram). If more() is then true, call next() after the caller is done with it.
  size_t receive(const FiveTuple& tuple, std::span<uint8_t> buffer, size_t length,
                 turn::MonoTime now);
  // Whether the last receive() left application records to read.
  bool more() const { return more_ != nullptr; }
  // The next record of the last datagram, decrypted into `buffer`; 0 when there is none.
  size_t next(std::span<uint8_t> buffer);

  // Encrypts a TURN message for `client` onto the output; false (counted by the caller) when
  // there is no established session or the output is full (drain it and try again).
  bool send(const TransportAddress& client, std::span<const uint8_t> message);
  bool full() const { return output_.bytes.size() >= limits_.max_output_bytes; }

  // The datagrams to send: calls `fn(tuple, bytes)` for each, in order, `tuple` the 5-tuple of
  // the session that sends it (its client is the destination, its server address the source).
  // The bytes stay valid until clearOutput().
  template <class Fn>
  void forEachOutput(Fn&& fn) const {
    uint32_t begin = 0;
    for (size_t i = 0; i < output_.ends.size(); ++i) {
      fn(destinations_[i],
         std::span<const uint8_t>(output_.bytes).subspan(begin, output_.ends[i] - begin));
      begin = output_.ends[i];
    }
  }
  bool hasOutput() const { return !output_.ends.empty(); }
  void clearOutput();

  // Retransmits handshake flights, closes sessions past their timeouts. Call a few times a
  // second.
  void sweep(turn::MonoTime now);
  void setTlsContext(net::TlsContextPtr context);
  // New limits (a config change): they apply from the next ClientHello and sweep on.
  void setLimits(const Limits& limits) { limits_ = limits; }

  size_t sessionCount() const { return sessions_.size(); }
  const DtlsListenerStats& stats() const { return stats_; }

 private:
  struct Session {
    std::unique_ptr<net::DtlsSession> dtls;
    FiveTuple tuple;
    turn::MonoTime started;
    turn::MonoTime last_active;
  };

  // Destinations of the datagrams queued since `first` (the queue's size before an operation).
  void attribute(const FiveTuple& tuple, size_t first);
  // A ClientHello from `tuple`, which holds an established session when `replacing`.
  void onNewClient(const FiveTuple& tuple, std::span<const uint8_t> datagram, bool replacing);
  void close(const TransportAddress& client);
  // Reads the next record of `s`; handles close and failure.
  size_t readRecord(Session& s, std::span<uint8_t> buffer);

  net::TlsContextPtr context_;
  Limits limits_;
  Callbacks callbacks_;
  // Before the sessions, which write into it: destroyed after them.
  net::DatagramQueue output_;
  std::vector<FiveTuple> destinations_;          // parallel to output_.ends
  std::unique_ptr<net::DtlsSession> listening_;  // the stateless cookie exchange
  std::unordered_map<TransportAddress, std::unique_ptr<Session>> sessions_;
  Session* more_ = nullptr;  // the session receive() left records in
  DtlsListenerStats stats_;
};

}  // namespace kturn::worker
