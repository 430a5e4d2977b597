// The NetworkPolicy of a Gateway's kturnd pods (kturn, RenderOptions::dataplaneNetworkPolicy):
// named after the Gateway, in its namespace, owned by it, selecting the pods of its Deployment.
// Ingress only:
//   - from anywhere: every UDP port and every TCP port but the two below (TURN listeners, and the
//     relay ports peers send to, which a policy cannot name one by one);
//   - the health and metrics ports (TCP 8086 and 8080, or the Gateway's AdminPorts) only from
//     RenderOptions::metricsNamespace (Prometheus). The kubelet's probes come from the node,
//     which CNIs that enforce policies admit to the node's own pods.
// None for a hostNetwork Dataplane: a policy does not apply to pods in the host's network.
#pragma once

#include <optional>

#include "k8s/gateway_api.h"
#include "k8s/object.h"
#include "k8s/stunner_api.h"
#include "operator/deployment_renderer.h"
#include "operator/render_options.h"

namespace kturn::op {

std::optional<k8s::Object> renderNetworkPolicy(const k8s::Gateway& gateway,
                                               const k8s::Dataplane& dataplane,
                                               const RenderOptions& options,
                                               const AdminPorts& ports = {});

}  // namespace kturn::op
