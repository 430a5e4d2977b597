// The Service that exposes a Gateway's stunnerd pods (STUNner internal/renderer/service_util.go
// createLbService4Gateway), named after the Gateway, in its namespace, owned by it.
//
//   type          stunner.l7mp.io/service-type (Gateway, else GatewayConfig
//                 loadBalancerServiceAnnotations), default LoadBalancer
//   annotations   GatewayConfig loadBalancerServiceAnnotations, then the Gateway's, then
//                 stunner.l7mp.io/related-gateway-name: <ns>/<gateway>
//   ports         one per listener, named after it; without
//                 stunner.l7mp.io/enable-mixed-protocol-lb: "true" only listeners with the
//                 first listener's transport (UDP or TCP) are exposed
//   + externalTrafficPolicy Local (stunner.l7mp.io/external-traffic-policy: local),
//     sessionAffinity ClientIP unless disabled, the cloud health-check port read from the
//     service.beta.kubernetes.io/*health*port|protocol annotations, nodeport/targetport
//     annotations, loadBalancerIP from spec.addresses[0].
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "k8s/gateway_api.h"
#include "k8s/object.h"
#include "k8s/stunner_api.h"

namespace kturn::op {

struct ServiceRender {
  std::optional<k8s::Object> service;  // nullopt when no listener can be exposed
  // Listener name → container port, from stunner.l7mp.io/targetport.
  std::map<std::string, int> targetPorts{};
  // Listeners left out of the Service because their transport differs from the first one's.
  std::set<std::string> unexposed{};
  // The Service's protocol when mixed protocols are off ("" if no valid listener).
  std::string serviceProtocol{};
};

// `validListeners` are the names of listeners that are rendered; others get no port.
ServiceRender renderService(const k8s::Gateway& gateway, const k8s::GatewayConfig& gatewayConfig,
                            const std::set<std::string>& validListeners);

// The Gateway's annotations over the GatewayConfig's loadBalancerServiceAnnotations, the view
// STUNner reads its per-Gateway switches from.
k8s::StringMap effectiveAnnotations(const k8s::Gateway& gateway,
                                    const k8s::GatewayConfig& gatewayConfig);

// {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name", "uid"}, as
// controllerutil.SetOwnerReference writes it.
k8s::Json gatewayOwnerReference(const k8s::Gateway& gateway);

}  // namespace kturn::op
