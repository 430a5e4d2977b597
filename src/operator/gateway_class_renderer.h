// A GatewayClass of this controller: what it resolves to for its Gateways (its GatewayConfig and
// Dataplane, renderer.h rule 1) and its status.
#pragma once

#include <string>

#include "k8s/gateway_api.h"
#include "operator/cluster_snapshot.h"
#include "operator/gateway_renderer.h"
#include "operator/render_options.h"
#include "operator/render_result.h"

namespace kturn::op {

struct GatewayClassRender {
  ClassContext context{};
  std::string problem{};  // why the class cannot be used; empty: accepted
  StatusUpdate status{};
};

GatewayClassRender renderGatewayClass(const k8s::GatewayClass& gatewayClass,
                                      const ClusterSnapshot& snapshot,
                                      const RenderOptions& options);

}  // namespace kturn::op
