// What the sans-I/O core asks its driver to do, appended while handling one input. The driver
// sends them (batched) and then clears the list; vectors keep their capacity, so steady-state
// handling allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kturn/transport_address.h"
#include "turn/ids.h"

namespace kturn::turn {

struct SendToClient {
  ListenerId listener = 0;
  TransportAddress client;
  // The server address the client reached (its 5-tuple's), the source of what is sent to it. A
  // listener bound to a wildcard address must answer from it: a client accepts what comes back
  // from the address it sent to, and an allocation is bound to that 5-tuple (RFC 8656 §2.2).
  IpAddress local;
  std::span<const uint8_t> data;  // into the input buffer or this Actions' arena
};

struct SendToPeer {
  AllocationId allocation;  // send from this allocation's relay socket
  TransportAddress peer;
  std::span<const uint8_t> data;  // into the input buffer
};

class Actions {
 public:
  static constexpr size_t kArenaSize = 64 * 1024;

  Actions() : arena_(kArenaSize) {
    to_clients.reserve(256);
    to_peers.reserve(256);
  }
  Actions(const Actions&) = delete;
  Actions& operator=(const Actions&) = delete;

  std::vector<SendToClient> to_clients;
  std::vector<SendToPeer> to_peers;

  // Scratch space for one response; empty if the arena is full (the driver should flush when
  // arenaUsed() passes half the arena).
  std::span<uint8_t> scratch(size_t max_size) {
    if (arena_.size() - used_ < max_size) return {};
    return {arena_.data() + used_, max_size};
  }
  // Marks the first `n` bytes of the last scratch() as used.
  void commit(size_t n) { used_ += (n + 7) & ~size_t{7}; }
  size_t arenaUsed() const { return used_; }

  bool empty() const { return to_clients.empty() && to_peers.empty(); }
  void clear() {
    to_clients.clear();
    to_peers.clear();
    used_ = 0;
  }

 private:
  std::vector<uint8_t> arena_;
  size_t used_ = 0;
};

}  // namespace kturn::turn
