#include "turn/peer_connections.h"

#include <vector>

namespace kturn::turn {

ConnectionId PeerConnections::nextId() {
  // A worker would need 16 million live connections for this to loop.
  for (;;) {
    next_ = (next_ + 1) & 0xFFFFFF;
    if (next_ == 0) continue;
    const ConnectionId id = prefix_ | next_;
    if (!owners_.contains(id)) return id;
  }
}

void PeerConnections::add(Allocation& a, const PeerConnection& c) {
  owners_.emplace(c.id, a.id);
  a.connections.push_back(c);
}

PeerConnections::Held PeerConnections::find(ConnectionId id, AllocationTable& allocations) const {
  const auto owner = owners_.find(id);
  if (owner == owners_.end()) return {};
  Allocation* a = allocations.find(owner->second);
  return {a, a != nullptr ? a->findConnection(id) : nullptr};
}

void PeerConnections::forget(Allocation& a, ConnectionId id) {
  owners_.erase(id);
  std::erase_if(a.connections, [id](const PeerConnection& c) { return c.id == id; });
}

void PeerConnections::forgetAll(const Allocation& a) {
  for (const PeerConnection& c : a.connections) owners_.erase(c.id);
}

size_t PeerConnections::expire(Allocation& a, MonoTime now, RelayAllocator& relays) {
  return std::erase_if(a.connections, [&](const PeerConnection& c) {
    if (c.state != PeerConnection::State::kPendingBind || c.deadline > now) return false;
    relays.closeConnection(c.id);
    owners_.erase(c.id);
    return true;
  });
}

}  // namespace kturn::turn
