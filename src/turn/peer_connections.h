// The peer connections of this core's TCP allocations (RFC 6062): which allocation holds each (a
// ConnectionBind names only the id), the ids this core hands out, and the bind deadline. A
// connection's state lives in its Allocation and its sockets in the I/O layer (RelayAllocator);
// this is the index over them. Worker-local like the rest of the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "turn/allocation.h"
#include "turn/allocation_table.h"
#include "turn/ids.h"
#include "turn/relay_allocator.h"
#include "turn/time.h"

namespace kturn::turn {

class PeerConnections {
 public:
  // RFC 6062 §5.2 and §5.3: a connection not bound within 30 s is closed.
  static constexpr Seconds kBindTimeout{30};
  // Peer connections one allocation may hold, open or pending: each is a socket and buffers in
  // the I/O layer. A Connect past it gets 508, a peer connecting past it is closed.
  static constexpr size_t kMaxPerAllocation = 64;

  // `prefix`: the daemon's worker index, the top 8 bits of every id this core hands out, so that
  // a ConnectionBind reaching another worker finds its way here.
  explicit PeerConnections(uint8_t prefix) : prefix_(uint32_t{prefix} << 24) {}

  static bool full(const Allocation& a) { return a.connections.size() >= kMaxPerAllocation; }
  // An id no live connection has: 24 bits of sequence under the prefix, never 0.
  ConnectionId nextId();
  // Adds `c` (its id from nextId()) to `a`.
  void add(Allocation& a, const PeerConnection& c);

  struct Held {
    Allocation* allocation = nullptr;
    PeerConnection* connection = nullptr;  // null if the allocation no longer holds it
  };
  // The connection `id` and the allocation that holds it; both null for an unknown id.
  Held find(ConnectionId id, AllocationTable& allocations) const;
  // Connection `id` of `a` is gone.
  void forget(Allocation& a, ConnectionId id);
  // `id`, whose allocation is gone.
  void forget(ConnectionId id) { owners_.erase(id); }
  // `a` is ending: its connections close with it.
  void forgetAll(const Allocation& a);
  // Closes the connections of `a` whose ConnectionBind is overdue; returns how many.
  size_t expire(Allocation& a, MonoTime now, RelayAllocator& relays);

  // fn(Allocation&, const PeerConnection&) for each bound connection.
  template <class Fn>
  void forEachBound(AllocationTable& allocations, Fn&& fn) const {
    for (const auto& [id, owner] : owners_) {
      Allocation* a = allocations.find(owner);
      const PeerConnection* c = a != nullptr ? a->findConnection(id) : nullptr;
      if (c != nullptr && c->state == PeerConnection::State::kBound) fn(*a, *c);
    }
  }

 private:
  std::unordered_map<ConnectionId, AllocationId> owners_;
  uint32_t prefix_;
  uint32_t next_ = 0;
};

}  // namespace kturn::turn
