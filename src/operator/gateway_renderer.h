// One Gateway's render: its dataplane config, Deployment and Service, and its status (STUNner
// render_pipeline.go renderForGateways, in the operator's "managed" dataplane mode: one config
// and one stunnerd Deployment per Gateway).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s/gateway_api.h"
#include "k8s/stunner_api.h"
#include "operator/cluster_renderer.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_options.h"
#include "operator/render_result.h"

namespace kturn::op {

// What a GatewayClass resolves to; shared by its Gateways.
struct ClassContext {
  const k8s::GatewayClass* gatewayClass = nullptr;
  const k8s::GatewayConfig* gatewayConfig = nullptr;
  k8s::Dataplane dataplane{};
};

struct GatewayRender {
  GatewayOutput output{};
  k8s::Json status;
};

// `clusterOf(i)` is the cluster of snapshot.route(i), asked only for the routes naming the
// Gateway.
GatewayRender renderGateway(const k8s::Gateway& gateway, const ClassContext& context,
                            const ClusterSnapshot& snapshot, const ClusterOf& clusterOf,
                            const RenderOptions& options);

// The status of a Gateway that cannot be rendered (its class or GatewayConfig is broken):
// Accepted False with `reason` and `message`, Programmed False, every listener pending.
GatewayRender rejectGateway(const k8s::Gateway& gateway, std::string_view reason,
                            const std::string& message, const RenderOptions& options);

}  // namespace kturn::op
