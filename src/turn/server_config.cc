#include "turn/server_config.h"

namespace kturn::turn {
namespace {

bool prefixMatches(const IpAddress& prefix, uint8_t length, const IpAddress& ip) {
  if (prefix.family() != ip.family()) return false;
  const auto a = prefix.bytes();
  const auto b = ip.bytes();
  const size_t full = length / 8;
  for (size_t i = 0; i < full; ++i) {
    if (a[i] != b[i]) return false;
  }
  const int rest = length % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

}  // namespace

bool PeerRange::containsIp(const IpAddress& ip) const {
  return prefixMatches(prefix, prefix_length, ip);
}

bool PeerRange::contains(const TransportAddress& peer) const {
  return peer.port >= min_port && peer.port <= max_port && containsIp(peer.ip);
}

bool ListenerPolicy::allowsIp(const IpAddress& ip) const {
  for (const PeerRange& r : peers) {
    if (r.containsIp(ip)) return true;
  }
  return false;
}

bool ListenerPolicy::allows(const TransportAddress& peer) const {
  for (const PeerRange& r : peers) {
    if (r.contains(peer)) return true;
  }
  return false;
}

bool ListenerPolicy::allowsAllPorts(const IpAddress& ip) const {
  for (const PeerRange& r : peers) {
    if (r.min_port <= 1 && r.max_port == 65535 && r.containsIp(ip)) return true;
  }
  return false;
}

const ListenerPolicy* ServerConfig::listener(ListenerId id) const {
  for (const ListenerPolicy& l : listeners) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

}  // namespace kturn::turn
