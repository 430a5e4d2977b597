// Where clients reach a listener from outside, written into the listener's public_address and
// public_port and into the Gateway's status.addresses (STUNner service_util.go getPublicAddr).
// Preference, per listener, once a Service port matches the listener's port and protocol:
//   1. Gateway spec.addresses[0] with the Service port;
//   2. the LoadBalancer's status.loadBalancer.ingress IP (else hostname), per-port status first;
//   3. the first Node with an ExternalIP (else ExternalDNS), with the port's nodePort.
#pragma once

#include <optional>
#include <string>

#include "k8s/core_api.h"
#include "k8s/gateway_api.h"
#include "operator/cluster_snapshot.h"

namespace kturn::op {

struct PublicAddress {
  std::string type{};  // Gateway API address type: IPAddress or Hostname
  std::string address{};
  int port = 0;
};

// The Service to read addresses from: the one in the cluster annotated
// stunner.l7mp.io/related-gateway-name=<ns>/<name> and owned by the Gateway (LoadBalancer
// preferred over ExternalName, NodePort, ClusterIP), else `rendered`, the Service this render
// produces. STUNner reads only the former, so a Gateway's first render there has no address;
// using the rendered Service lets spec.addresses take effect at once.
std::optional<k8s::Service> publicService(const k8s::Gateway& gateway,
                                          const ClusterSnapshot& snapshot,
                                          const std::optional<k8s::Object>& rendered);

std::optional<PublicAddress> publicAddress(const k8s::Gateway& gateway,
                                           const k8s::GatewayListener& listener,
                                           const k8s::Service& service,
                                           const ClusterSnapshot& snapshot);

}  // namespace kturn::op
