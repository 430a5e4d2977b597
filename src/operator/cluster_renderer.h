// A route's cluster: the peers stunnerd may relay to for it (STUNner
// internal/renderer/cluster_render.go). Named `<namespace>/<route>`, type STATIC, and its
// endpoints are, per backendRef:
//   Service        the addresses of all its EndpointSlice endpoints, ready or not (clients went
//                  through ICE already and may know better than Kubernetes), plus its ClusterIP;
//   StaticService  its prefixes;
// each followed by `:<port-endPort>` when the backendRef narrows the peer ports.
// Beyond STUNner: every rule of the route counts (STUNner reads the first), TCPRoutes render TCP
// clusters, and a backend in another namespace needs a ReferenceGrant (RenderOptions).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "config/cluster.h"
#include "k8s/route.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_options.h"

namespace kturn::op {

struct ClusterRender {
  // nullopt when the route has no rules (STUNner's NoRuleFound): nothing to render.
  std::optional<config::Cluster> cluster{};
  // The route's ResolvedRefs condition: empty reason when every backendRef resolved, else the
  // reason of the last one that did not (STUNner's rule) and a message naming each failure.
  std::string reason{};
  std::string message{};

  bool resolved() const { return reason.empty(); }
};

ClusterRender renderCluster(const k8s::Route& route, const ClusterSnapshot& snapshot,
                            const RenderOptions& options);

// The cluster of the route at a position in ClusterSnapshot::routes(), rendered once and kept.
using ClusterOf = std::function<const ClusterRender&(size_t route)>;

}  // namespace kturn::op
