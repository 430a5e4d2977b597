// Peer addresses a TURN relay must not reach just because a cluster is a catch-all (RFC 8656
// §21.3, and the addresses coturn's filters missed): loopback and its aliases, "this host",
// link-local (with the cloud metadata endpoints), multicast and broadcast, and the 6to4 and
// Teredo tunnel prefixes (eturnal's recommendation). Private ranges are ordinary peers: pods
// live there.
#pragma once

#include <optional>

#include "kturn/transport_address.h"

namespace kturn::turn {

struct IpPrefix {
  IpAddress prefix;
  uint8_t length = 0;
  bool contains(const IpAddress& ip) const;
  // Whether every address of `other` lies inside this prefix.
  bool covers(const IpAddress& other_prefix, uint8_t other_length) const;
};

// The restricted range `ip` falls in, if any. IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible
// (::a.b.c.d) addresses are judged by their IPv4 address, so they cannot smuggle loopback past
// the check.
std::optional<IpPrefix> restrictedRangeOf(const IpAddress& ip);

}  // namespace kturn::turn
