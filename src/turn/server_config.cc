#include "turn/server_config.h"

#include "turn/restricted_peers.h"

namespace kturn::turn {

bool ServerConfig::trusted(const IpAddress& ip) const {
  for (const IpPrefix& p : trusted_sources) {
    if (p.contains(ip)) return true;
  }
  return false;
}

bool PeerRange::containsIp(const IpAddress& ip) const {
  return IpPrefix{prefix, prefix_length}.contains(ip);
}

bool PeerRange::contains(const TransportAddress& peer) const {
  return peer.port >= min_port && peer.port <= max_port && containsIp(peer.ip);
}

namespace {

// Whether endpoint `r` may admit `ip`: always for ordinary addresses; for a restricted one only
// when `r` lies inside the restricted range itself.
bool mayAdmit(const PeerRange& r, const std::optional<IpPrefix>& restricted) {
  return !restricted || restricted->covers(r.prefix, r.prefix_length);
}

}  // namespace

bool ListenerPolicy::isOwnAddress(const TransportAddress& peer) const {
  for (const TransportAddress& own : own_addresses) {
    if (own.port != peer.port) continue;
    if (own.ip == peer.ip) return true;
    if (own.ip.isUnspecified() && restrictedRangeOf(peer.ip)) return true;
  }
  return false;
}

bool ListenerPolicy::allowsIp(const IpAddress& ip) const {
  const auto restricted = restrictedRangeOf(ip);
  for (const PeerRange& r : peers) {
    if (r.containsIp(ip) && mayAdmit(r, restricted)) return true;
  }
  return false;
}

const PeerRange* ListenerPolicy::admitting(const TransportAddress& peer) const {
  if (isOwnAddress(peer)) return nullptr;
  const auto restricted = restrictedRangeOf(peer.ip);
  for (const PeerRange& r : peers) {
    if (r.contains(peer) && mayAdmit(r, restricted)) return &r;
  }
  return nullptr;
}

const PeerRange* ListenerPolicy::admittingAllPorts(const IpAddress& ip) const {
  for (const TransportAddress& own : own_addresses) {
    // Some port of this IP is our own listener: every packet's port must be checked.
    if (own.ip == ip || (own.ip.isUnspecified() && restrictedRangeOf(ip))) return nullptr;
  }
  const auto restricted = restrictedRangeOf(ip);
  for (const PeerRange& r : peers) {
    if (r.min_port <= 1 && r.max_port == 65535 && r.containsIp(ip) && mayAdmit(r, restricted)) {
      return &r;
    }
  }
  return nullptr;
}

const PeerRange* ListenerPolicy::admittingTcp(const TransportAddress& peer, bool ip_only) const {
  if (!ip_only && isOwnAddress(peer)) return nullptr;
  const auto restricted = restrictedRangeOf(peer.ip);
  for (const PeerRange& r : peers) {
    if (r.protocol != TransportProtocol::kTcp || !mayAdmit(r, restricted)) continue;
    if (ip_only ? r.containsIp(peer.ip) : r.contains(peer)) return &r;
  }
  return nullptr;
}

const ListenerPolicy* ServerConfig::listener(ListenerId id) const {
  for (const ListenerPolicy& l : listeners) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

}  // namespace kturn::turn
