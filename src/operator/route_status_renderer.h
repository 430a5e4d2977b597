// A route's status (renderer.h rule 3): per parentRef naming a Gateway of this controller,
// Accepted (Accepted, NotAllowedByListeners, NoMatchingParent, Pending) and ResolvedRefs.
#pragma once

#include <map>
#include <optional>

#include "k8s/route.h"
#include "operator/cluster_renderer.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_options.h"
#include "operator/render_result.h"

namespace kturn::op {

// `ours`: Gateway key → whether it is accepted (its class is, and it rendered a config), for the
// Gateways of this controller's classes only. nullopt when no parent of the route is one of them:
// its status belongs to other controllers. `clusterOf(index)` is asked only when there is a
// status to render.
std::optional<StatusUpdate> renderRouteStatus(size_t index, const ClusterSnapshot& snapshot,
                                              const std::map<k8s::ObjectKey, bool>& ours,
                                              const ClusterOf& clusterOf,
                                              const RenderOptions& options);

}  // namespace kturn::op
