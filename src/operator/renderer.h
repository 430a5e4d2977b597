// The operator's renderer: a pure function from the cluster's objects to the desired state of
// every Gateway's dataplane and the status of every object the controller is responsible for
// (docs/operator.md). No I/O, no clock, no randomness: the same snapshot and options give the same
// result, which the golden tests under tests/golden pin down.
//
// Order and rules (STUNner stunner-gateway-operator internal/renderer/render_pipeline.go,
// managed dataplane mode):
//   1. GatewayClasses whose controllerName is not options.controllerName are ignored. Each other
//      class needs parametersRef → a GatewayConfig (group stunner.l7mp.io, kind GatewayConfig,
//      name and namespace set, object present) and a Dataplane (GatewayConfig spec.dataplane,
//      "default" when unset); if not, the class is Accepted False InvalidParameters and its
//      Gateways are rejected. kturn difference: a missing "default" Dataplane is replaced by the
//      built-in one (builtinDataplane()) instead of failing the class.
//   2. Each Gateway of an accepted class is rendered on its own (gateway_renderer.h): a broken
//      Gateway never affects another.
//   3. Each route (STUNner UDPRoute/TCPRoute, Gateway API UDPRoute unless masked by a STUNner
//      UDPRoute of the same name) with a parent Gateway of an accepted class gets a status per
//      parentRef: Accepted (Accepted, NotAllowedByListeners, NoMatchingParent) and ResolvedRefs.
#pragma once

#include "operator/cluster_snapshot.h"
#include "operator/gateway_class_renderer.h"
#include "operator/gateway_renderer.h"
#include "operator/render_options.h"
#include "operator/render_result.h"

namespace kturn::op {

// The whole render, from scratch. IncrementalRenderer (incremental_renderer.h) gives the same
// result re-rendering only what a change reaches; this one is the check it is tested against.
RenderResult render(const ClusterSnapshot& snapshot, const RenderOptions& options = {});

// A Gateway of a class of this controller: rendered when the class is accepted, else rejected
// naming the class's problem.
GatewayRender renderClassGateway(const k8s::Gateway& gateway,
                                 const GatewayClassRender& gatewayClass,
                                 const ClusterSnapshot& snapshot, const ClusterOf& clusterOf,
                                 const RenderOptions& options);

}  // namespace kturn::op
