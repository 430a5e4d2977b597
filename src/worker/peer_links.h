// The TCP side of RFC 6062 TCP allocations on one worker: peer connections, made by Connect or
// accepted on a relay, and once a ConnectionBind joins one to a client data connection, the
// bytes between the two. The TURN core decides; this owns the sockets.
//
// Flow control instead of drops: each direction buffers at most kMaxBuffered bytes, and a side
// is not read while the other's buffer is full, so a slow reader slows its sender through TCP's
// own window (RFC 6062 §5.2: the server adjusts its advertised receive window). Buffers keep
// their capacity: steady-state relaying allocates nothing.
//
// Bandwidth caps pace rather than drop: a side is read no further than its allowance (the core's
// token buckets, Callbacks::allowance), and a side with none left is held, unread, until the
// next sweep(), so the sender's TCP window closes and the average rate is the cap.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kturn/transport_address.h"
#include "net/event_loop.h"
#include "net/file_descriptor.h"
#include "turn/ids.h"
#include "turn/relay_allocator.h"
#include "turn/server_stats.h"
#include "turn/time.h"
#include "worker/stream_listener.h"

namespace kturn::worker {

struct PeerLinkStats {
  uint64_t to_peer_bytes = 0;
  uint64_t to_client_bytes = 0;
  uint64_t connect_timeouts = 0;
};

class PeerLinks {
 public:
  static constexpr size_t kMaxBuffered = 64 * 1024;
  // RFC 6062 §5.2: a Connect fails with 447 if the peer has not answered in 30 s.
  static constexpr std::chrono::seconds kConnectTimeout{30};

  struct Callbacks {
    // A connect() finished: up, or refused, failed or timed out.
    std::function<void(turn::ConnectionId, bool connected)> on_connected;
    // A link closed by either end (not by close() or closeAllocation()).
    std::function<void(turn::ConnectionId)> on_closed;
    // Bytes a link of the allocation may read now toward the peer (true) or the client (false),
    // and the bytes it then read (Server::connectionAllowance()). Unset: no caps.
    std::function<uint64_t(turn::AllocationId, bool to_peer)> allowance;
    std::function<void(turn::AllocationId, bool to_peer, uint64_t bytes)> spend;
  };

  PeerLinks(net::EventLoop& loop, Callbacks callbacks);
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // Starts connecting `local` (a TCP relay's address) to `peer`. False if that failed at once.
  bool connect(turn::AllocationId allocation, turn::ConnectionId id, const TransportAddress& local,
               const TransportAddress& peer, turn::MonoTime now);
  // A peer connection accepted on a relay, which the core offered to the client as `id`. Its
  // bytes are buffered (up to kMaxBuffered) until the join.
  void adopt(turn::AllocationId allocation, turn::ConnectionId id, net::FileDescriptor fd);
  // Joins link `id` to the client's data connection, which came in on `listener` and whose
  // ConnectionBind response may still be in its output. Closes the client connection if there
  // is no such link.
  void join(turn::ConnectionId id, turn::ListenerId listener,
            std::unique_ptr<StreamListener::Connection> client);
  // Closes one link, or every link of an allocation, without calling on_closed.
  void close(turn::ConnectionId id);
  void closeAllocation(turn::AllocationId allocation);
  // Fails connects older than kConnectTimeout and reads the sides a cap held, as far as their
  // allowance now goes. Every 250 ms.
  void sweep(turn::MonoTime now);

  size_t size() const { return links_.size(); }
  const PeerLinkStats& stats() const { return stats_; }
  // The client side of data connections, by the listener they came in on (ListenerTraffic's
  // share): bytes read from and queued for clients. A stream has no packets.
  const std::vector<turn::TrafficCounters>& listenerTraffic() const { return traffic_; }
  // Application bytes link `id` relayed since the last call (zero for unknown ids); during
  // on_closed, still the closing link's.
  turn::ConnectionTraffic take(turn::ConnectionId id);

 private:
  struct Link {
    enum class State : uint8_t { kConnecting, kPending, kJoined };
    turn::ConnectionId id = 0;
    turn::AllocationId allocation;
    State state = State::kConnecting;
    turn::MonoTime started;
    net::FileDescriptor peer;
    uint32_t peer_events = 0;
    // Bytes for the peer, read in place: [head, tail) of a buffer sized at the join.
    struct Queue {
      std::vector<uint8_t> bytes;
      size_t head = 0;
      size_t tail = 0;
      size_t size() const { return tail - head; }
      // The free space after the queued bytes, moving them to the front when that frees some.
      std::span<uint8_t> room();
    } to_peer;
    // Peer bytes read before the join.
    std::vector<uint8_t> early;
    std::unique_ptr<StreamListener::Connection> client;
    turn::ListenerId listener = 0;
    uint32_t client_events = 0;
    // A side a bandwidth cap holds: not read until sweep().
    bool client_held = false;
    bool peer_held = false;
    turn::ConnectionTraffic uncounted;  // for take()
  };

  void onPeerEvent(turn::ConnectionId id, uint32_t events);
  void onClientEvent(turn::ConnectionId id, uint32_t events);
  // Reads the sides an event found readable (until they drain or the other side's buffer is
  // full), then writes what is queued both ways; false when the link must close. A side that
  // was not readable costs no syscall.
  bool pump(Link& link, bool client_readable, bool peer_readable);
  // How much of `room` the link may read toward the peer or the client; holds the side at zero.
  size_t allowed(Link& link, bool to_peer, size_t room);
  void spend(const Link& link, bool to_peer, size_t bytes);
  turn::TrafficCounters& traffic(turn::ListenerId id);
  // Re-arms both sockets for what each can take now.
  void arm(Link& link);
  // Removes the link, closing both sockets; `notify`: tell on_closed.
  void drop(turn::ConnectionId id, bool notify);

  net::EventLoop& loop_;
  Callbacks callbacks_;
  std::unordered_map<turn::ConnectionId, std::unique_ptr<Link>> links_;
  std::vector<uint8_t> scratch_;  // one read's worth of peer bytes on their way to the client
  PeerLinkStats stats_;
  std::vector<turn::TrafficCounters> traffic_;  // by ListenerId
};

}  // namespace kturn::worker
