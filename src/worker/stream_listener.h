// TURN over TCP or TLS for one listener on one worker (RFC 8656 §3.1): the worker's own
// SO_REUSEPORT listening socket, the connections the kernel hands it, TLS when the listener has a
// certificate, stream framing on the way in and bounded, buffered writes on the way out. The TURN
// core stays sans-I/O: frames go to the worker through callbacks, answers come back through send().
//
// Limits keep slow or half-open clients from exhausting the worker: a connection cap, an idle
// timeout for connections that hold no allocation, a handshake timeout for TLS, and an output bound
// per connection (a client that does not read loses frames, as it would over UDP, instead of
// growing kturnd's memory).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kturn/transport_address.h"
#include "net/event_loop.h"
#include "net/file_descriptor.h"
#include "net/tls_context.h"
#include "net/tls_stream.h"
#include "turn/ids.h"
#include "turn/time.h"

namespace kturn::worker {

struct StreamListenerStats {
  uint64_t accepted = 0;
  uint64_t refused = 0;           // over max_connections
  uint64_t closed_idle = 0;       // idle timeout
  uint64_t closed_framing = 0;    // bytes that were neither STUN nor ChannelData
  uint64_t frames_dropped = 0;    // output bound reached
  uint64_t closed_handshake = 0;  // TLS: no handshake within the handshake timeout
  uint64_t tls_failures = 0;      // TLS: handshake or record errors
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};

class StreamListener {
 public:
  // One client connection. Public so that a connection can leave its listener whole (detach()):
  // an RFC 6062 data connection, which carries raw bytes once its ConnectionBind succeeded.
  struct Connection {
    net::FileDescriptor fd;
    FiveTuple tuple;
    std::vector<uint8_t> in;  // received bytes not yet framed: [0, in_used)
    size_t in_used = 0;
    std::vector<uint8_t> out;  // queued bytes: [out_head, out.size())
    size_t out_head = 0;
    bool want_write = false;  // EPOLLOUT armed
    bool dirty = false;       // listed in dirty_
    turn::MonoTime accepted;
    turn::MonoTime last_active;
    std::unique_ptr<net::TlsStream> tls;  // TURN-TLS; writes its records into `out`
    bool detach_requested = false;        // requestDetach(): no more frames, then on_detached
  };
  struct Limits {
    size_t max_connections = 8192;  // per worker; more are accepted and closed at once
    // A connection holding no allocation and silent this long is closed (also bounds the time
    // a client may take before its first Allocate).
    std::chrono::seconds idle_timeout{30};
    size_t max_output_bytes = 1 << 20;  // per connection
    // TLS: a connection whose handshake has not completed this long after accept is closed.
    std::chrono::seconds handshake_timeout{10};
  };
  struct Callbacks {
    // One frame from a client: a STUN message, or a ChannelData message with its padding. The
    // bytes stay valid until on_batch_end returns.
    std::function<void(const FiveTuple&, std::span<const uint8_t>)> on_frame;
    // After the frames of one read: the worker sends what the core produced.
    std::function<void()> on_batch_end;
    // The connection is gone (either side closed it, or a limit did).
    std::function<void(const FiveTuple&)> on_closed;
    // Whether the connection's 5-tuple holds an allocation (exempts it from the idle timeout).
    std::function<bool(const FiveTuple&)> has_allocation;
    // A connection requestDetach() asked for, once its batch is done; null: it is closed.
    std::function<void(std::unique_ptr<Connection>)> on_detached;
  };

  // `tls`: serve TLS with this context (TURN-TLS); null for plain TCP (TURN-TCP).
  StreamListener(net::EventLoop& loop, turn::ListenerId id, net::FileDescriptor listening,
                 const Limits& limits, Callbacks callbacks, net::TlsContextPtr tls = nullptr);
  // Closes every connection, calling on_closed for each.
  ~StreamListener();
  StreamListener(const StreamListener&) = delete;
  StreamListener& operator=(const StreamListener&) = delete;

  // Queues a frame for the client's connection; false (and counted) if there is none or its
  // output bound is reached. Sent by the next flush().
  bool send(const TransportAddress& client, std::span<const uint8_t> frame);
  // Writes what send() queued since the last flush.
  void flush();
  // Closes connections idle past the timeout, and TLS connections still handshaking past theirs.
  // Call about once a second.
  void sweep(turn::MonoTime now);
  // A new certificate: connections accepted from now on use `tls`; established ones keep the
  // context they were made with.
  void setTlsContext(net::TlsContextPtr tls) { tls_ = std::move(tls); }
  // New limits (a config change): they apply from the next accept and sweep on.
  void setLimits(const Limits& limits) { limits_ = limits; }

  // Takes the connection of `client` out of this listener, still open, with its unwritten output
  // and unframed input; on_closed is not called. Null if there is none. Not from inside the
  // connection's own on_frame (use requestDetach()).
  std::unique_ptr<Connection> detach(const TransportAddress& client);
  // From a callback of the connection: stop reading it after this batch and hand it to
  // on_detached (RFC 6062: its ConnectionBind was answered, or belongs to another worker).
  void requestDetach(const TransportAddress& client);
  // A connection detached from this listener's twin on another worker: served from now on.
  void adopt(std::unique_ptr<Connection> connection);

  size_t connectionCount() const { return connections_.size(); }
  const StreamListenerStats& stats() const { return stats_; }

 private:
  void onAcceptable();
  void onEvent(const TransportAddress& client, uint32_t events);
  // Reads and frames until the socket is drained; false if the connection must close.
  bool readFrames(Connection& c);
  // Hands the frames in c.in to on_frame, then on_batch_end; false if the bytes are out of sync.
  bool deliverFrames(Connection& c);
  // Reads received bytes (decrypted, for TLS) after the unframed ones: the count, 0 when the
  // client closed or failed, -1 when there is nothing more for now.
  ssize_t readSome(Connection& c);
  // Writes queued output; false if the connection must close.
  bool writeOut(Connection& c);
  // Marks a connection as having output to write at the next flush().
  void markDirty(const TransportAddress& client, Connection& c);
  void close(const TransportAddress& client);

  net::EventLoop& loop_;
  turn::ListenerId id_;
  net::FileDescriptor listening_;
  Limits limits_;
  Callbacks callbacks_;
  net::TlsContextPtr tls_;
  std::unordered_map<TransportAddress, std::unique_ptr<Connection>> connections_;
  std::vector<TransportAddress> dirty_;  // connections with output queued since the last flush
  StreamListenerStats stats_;
};

}  // namespace kturn::worker
