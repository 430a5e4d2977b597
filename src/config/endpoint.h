// Peer endpoints of a cluster: which peer transport addresses a relay may reach.
//
// STATIC clusters list IP prefixes with an optional peer port range, STUNner's syntax
// (internal/util/endpoint.go):
//
//   endpoint   = address [ "/" prefix-len ] [ ":<" min-port "-" max-port ">" ]
//   10.0.0.1                  one IPv4 host, any port
//   10.0.0.0/8:<1000-2000>    an IPv4 prefix, peer ports 1000..2000
//   fd00::/64                 an IPv6 prefix
//   2001:db8::1:<5000-5001>   one IPv6 host, two ports (no brackets: the ":<" marks the range)
//
// STRICT_DNS clusters list host names that are resolved elsewhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::config {

struct Endpoint {
  IpAddress prefix{};  // host bits cleared
  uint8_t prefix_len = 32;
  uint16_t min_port = 1;  // inclusive; 1-65535 when no range is given, as in STUNner
  uint16_t max_port = 65535;

  // True when peer has the prefix's address family, lies inside the prefix and its port is in
  // [min_port, max_port]. An IPv4 prefix never matches an IPv6 peer, not even ::ffff:a.b.c.d.
  bool contains(const TransportAddress& peer) const;
  // The address part only, for permission checks that carry no port (RFC 8656 §9).
  bool containsAddress(const IpAddress& peer) const;
  // STUNner's canonical form: "10.0.0.0/8:<1000-2000>", "1.2.3.4" (no "/32" unless written).
  std::string toString() const;

  bool has_prefix_len = false;  // written with "/len"; only affects toString()
  bool has_port_range = false;  // written with ":<a-b>"; only affects toString()

  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// A STRICT_DNS cluster endpoint: a host name and an optional ":<min-max>" peer port range. STUNner
// accepts only a bare name here; the port range is a kturn extension using the STATIC syntax.
struct DnsEndpoint {
  std::string host{};
  uint16_t min_port = 1;
  uint16_t max_port = 65535;

  friend bool operator==(const DnsEndpoint&, const DnsEndpoint&) = default;
};

// Errors say what is wrong without a field path; the caller prefixes it.
Result<Endpoint> parseEndpoint(std::string_view text);
Result<DnsEndpoint> parseDnsEndpoint(std::string_view text);

}  // namespace kturn::config
