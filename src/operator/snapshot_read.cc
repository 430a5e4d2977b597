#include "operator/snapshot_read.h"

#include "k8s/core_api.h"
#include "k8s/gateway_api.h"
#include "k8s/route.h"
#include "k8s/stunner_api.h"
#include "operator/well_known.h"

namespace kturn::op {

std::optional<std::vector<SnapshotRead>> readsReachedBy(const k8s::Object& o) {
  const std::string group = o.group();
  const std::string_view kind = o.kind();
  const k8s::ObjectKey key = o.key();
  std::vector<SnapshotRead> out;
  if (group == k8s::kGatewayGroup && kind == "GatewayClass") return std::nullopt;
  if (group == k8s::kStunnerGroup && (kind == "GatewayConfig" || kind == "Dataplane")) {
    return std::nullopt;
  }
  if (group == k8s::kGatewayGroup && kind == "Gateway") {
    out.push_back({ReadKind::kGateway, key});
    out.push_back({ReadKind::kAllGateways, {}});
  } else if (group == k8s::kGatewayGroup && kind == "ReferenceGrant") {
    out.push_back({ReadKind::kReferenceGrantsIn, {key.ns, ""}});
  } else if (auto routeKind = k8s::routeKindOf(o.meta())) {
    const k8s::Route route = k8s::readRoute(o, *routeKind);
    for (const k8s::ParentReference& p : route.parentRefs) {
      out.push_back({ReadKind::kRoutesNaming, {p.ns.value_or(key.ns), p.name}});
    }
    if (*routeKind == k8s::RouteKind::kStunnerUdp) out.push_back({ReadKind::kStunnerUdpRoute, key});
    out.push_back({ReadKind::kAllRoutes, {}});
  } else if (group == k8s::kStunnerGroup && kind == "StaticService") {
    out.push_back({ReadKind::kStaticService, key});
  } else if (group.empty() && kind == "Service") {
    out.push_back({ReadKind::kService, key});
    const auto& annotations = o.meta().annotations;
    if (auto it = annotations.find(std::string(kRelatedGatewayName)); it != annotations.end()) {
      // The annotation holds "<namespace>/<name>" (servicesRelatedTo() keys it so).
      const size_t slash = it->second.find('/');
      out.push_back({ReadKind::kServicesRelatedTo,
                     slash == std::string::npos ? k8s::ObjectKey{"", it->second}
                                                : k8s::ObjectKey{it->second.substr(0, slash),
                                                                 it->second.substr(slash + 1)}});
    }
    out.push_back({ReadKind::kAllServices, {}});
  } else if (group == "discovery.k8s.io" && kind == "EndpointSlice") {
    out.push_back({ReadKind::kEndpointSlicesOf, {key.ns, k8s::readEndpointSlice(o).serviceName}});
  } else if (group.empty() && kind == "Secret") {
    out.push_back({ReadKind::kSecret, key});
  } else if (group.empty() && kind == "Node") {
    out.push_back({ReadKind::kNodes, {}});
  } else if (group.empty() && kind == "Namespace") {
    out.push_back({ReadKind::kNamespace, {"", key.name}});
  }
  return out;
}

}  // namespace kturn::op
