#include "turn/allocation.h"

#include <algorithm>

namespace kturn::turn {

Permission* Allocation::findPermission(const IpAddress& ip) {
  for (Permission& p : permissions) {
    if (p.peer == ip) return &p;
  }
  return nullptr;
}

ChannelBinding* Allocation::findChannel(uint16_t number) {
  for (ChannelBinding& c : channels) {
    if (c.number == number) return &c;
  }
  return nullptr;
}

ChannelBinding* Allocation::findChannel(const TransportAddress& peer) {
  for (ChannelBinding& c : channels) {
    if (c.peer == peer) return &c;
  }
  return nullptr;
}

PeerConnection* Allocation::findConnection(ConnectionId id) {
  for (PeerConnection& c : connections) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

PeerConnection* Allocation::findConnection(const TransportAddress& peer) {
  for (PeerConnection& c : connections) {
    if (c.peer == peer) return &c;
  }
  return nullptr;
}

size_t Allocation::activePermissions(MonoTime now) const {
  return std::count_if(permissions.begin(), permissions.end(),
                       [now](const Permission& p) { return p.expires > now; });
}

size_t Allocation::activeChannels(MonoTime now) const {
  return std::count_if(channels.begin(), channels.end(),
                       [now](const ChannelBinding& c) { return c.expires > now; });
}

MonoTime Allocation::sweep(MonoTime now) {
  std::erase_if(permissions, [now](const Permission& p) { return p.expires <= now; });
  std::erase_if(channels, [now](const ChannelBinding& c) { return c.expires <= now; });
  return nextDeadline();
}

MonoTime Allocation::nextDeadline() const {
  MonoTime next = expires;
  for (const Permission& p : permissions) next = std::min(next, p.expires);
  for (const ChannelBinding& c : channels) next = std::min(next, c.expires);
  for (const PeerConnection& c : connections) {
    if (c.state == PeerConnection::State::kPendingBind) next = std::min(next, c.deadline);
  }
  return next;
}

}  // namespace kturn::turn
