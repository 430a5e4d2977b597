// Which routes attach to which Gateway listeners (STUNner internal/renderer/udproute_util.go):
// a parentRef names the Gateway (group gateway.networking.k8s.io, kind Gateway, namespace of the
// route by default), optionally one listener by sectionName, and the listener must allow routes
// from the route's namespace (allowedRoutes.namespaces.from: Same by default, All, Selector).
#pragma once

#include <string>

#include "k8s/gateway_api.h"
#include "k8s/route.h"
#include "operator/cluster_snapshot.h"

namespace kturn::op {

// The Gateway a parentRef points at (nullptr when it is not a Gateway reference or there is no
// such Gateway).
const k8s::Gateway* parentGateway(const k8s::Route& route, const k8s::ParentReference& parent,
                                  const ClusterSnapshot& snapshot);

// Empty when `listener` of `gateway` accepts the route through `parent`, else why not.
std::string rejectReason(const k8s::Route& route, const k8s::ParentReference& parent,
                         const k8s::Gateway& gateway, const k8s::GatewayListener& listener,
                         const ClusterSnapshot& snapshot);

// Whether some listener of the parent Gateway accepts the route (isParentAcceptingRoute).
bool parentAccepts(const k8s::Route& route, const k8s::ParentReference& parent,
                   const k8s::Gateway& gateway, const ClusterSnapshot& snapshot);

// metav1.LabelSelector semantics: matchLabels and matchExpressions (In, NotIn, Exists,
// DoesNotExist), all ANDed; an empty selector matches everything. nullopt for a malformed one.
std::optional<bool> selectorMatches(const k8s::Json& selector, const k8s::StringMap& labels);

}  // namespace kturn::op
