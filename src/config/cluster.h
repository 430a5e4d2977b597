// clusters[]: the peers relays may reach (pkg/apis/v1/cluster.go). A listener relays to a peer
// only if some cluster it routes to contains the peer (docs/security.md, "Who may be a peer").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/endpoint.h"
#include "kturn/result.h"

namespace kturn::config {

enum class ClusterType {
  kUnknown,
  kStatic,     // endpoints are IP prefixes with optional port ranges
  kStrictDns,  // endpoints are host names; a peer must be one of their resolved addresses
};

// Case-insensitive "STATIC" | "STRICT_DNS".
ClusterType parseClusterType(std::string_view text);
std::string_view toString(ClusterType type);

// The transport towards the peers: UDP relays (RFC 8656) or TCP relays (RFC 6062).
enum class ClusterProtocol { kUnknown, kUdp, kTcp };

ClusterProtocol parseClusterProtocol(std::string_view text);  // case-insensitive "UDP" | "TCP"
std::string_view toString(ClusterProtocol protocol);

struct Cluster {
  std::string name{};      // required, unique among clusters
  std::string type{};      // default "STATIC"
  std::string protocol{};  // default "UDP"
  std::vector<std::string> endpoints{};

  ClusterType clusterType() const { return parseClusterType(type); }
  ClusterProtocol clusterProtocol() const { return parseClusterProtocol(protocol); }
  // The endpoints of a STATIC cluster, parsed. The first bad one fails the call with its index:
  // `endpoints[2]: invalid address "10.0.0.300"`.
  Result<std::vector<Endpoint>> staticEndpoints() const;
  // The endpoints of a STRICT_DNS cluster, parsed likewise.
  Result<std::vector<DnsEndpoint>> dnsEndpoints() const;

  friend bool operator==(const Cluster&, const Cluster&) = default;
};

}  // namespace kturn::config
