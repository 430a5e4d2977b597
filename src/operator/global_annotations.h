// kturn's Gateway annotations for the global layer (docs/operations.md#many-regions), read into
// the dataplane config the operator renders for the Gateway:
//   kturn.io/capacity-allocations, kturn.io/capacity-relay-kbps, kturn.io/capacity-cpu-percent,
//   kturn.io/capacity-resume-percent   admin.capacity (the readiness marks)
//   kturn.io/alternate-addresses       comma-separated IPs of sibling Gateways (another region's
//                                      public addresses): each listener's alternate_servers is
//                                      every one of them at the listener's own port
//   kturn.io/alternate-domain          every TLS and DTLS listener's alternate_domain
//   kturn.io/region                    admin.region: kturn-auth's ICE server order, metrics
//   kturn.io/health-check-port         the health port of the Gateway's kturnd pods (metrics on
//                                      the next one): see AdminPorts
// STUNner has no such annotations; its Gateways render exactly as before.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/admin.h"
#include "k8s/object.h"
#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::op {

inline constexpr std::string_view kCapacityAllocationsAnnotation = "kturn.io/capacity-allocations";
inline constexpr std::string_view kCapacityRelayKbpsAnnotation = "kturn.io/capacity-relay-kbps";
inline constexpr std::string_view kCapacityCpuPercentAnnotation = "kturn.io/capacity-cpu-percent";
inline constexpr std::string_view kCapacityResumePercentAnnotation =
    "kturn.io/capacity-resume-percent";
inline constexpr std::string_view kAlternateAddressesAnnotation = "kturn.io/alternate-addresses";
inline constexpr std::string_view kAlternateDomainAnnotation = "kturn.io/alternate-domain";
inline constexpr std::string_view kRegionAnnotation = "kturn.io/region";
inline constexpr std::string_view kHealthCheckPortAnnotation = "kturn.io/health-check-port";

struct GlobalAnnotations {
  std::optional<config::Capacity> capacity;  // set when any capacity annotation is
  std::vector<IpAddress> alternate_addresses;
  std::string alternate_domain;
  std::string region;
  std::optional<int> health_check_port;

  // "IP:port" (or "[IPv6]:port") of each alternate address at `port`.
  std::vector<std::string> alternateServers(int port) const;
};

// The annotations of `meta`; an error names the annotation and what it wants (the Gateway is
// then not accepted, like one with a bad spec.addresses value).
Result<GlobalAnnotations> readGlobalAnnotations(const k8s::ObjectMeta& meta);

}  // namespace kturn::op
