#include "operator/renderer.h"

#include <algorithm>
#include <map>

#include "operator/cluster_renderer.h"
#include "operator/condition.h"
#include "operator/route_status_renderer.h"

namespace kturn::op {

RenderResult render(const ClusterSnapshot& snapshot, const RenderOptions& options) {
  RenderResult result;
  std::vector<ClusterRender> clusters;
  for (const k8s::Route& route : snapshot.routes()) {
    clusters.push_back(renderCluster(route, snapshot, options));
  }
  const ClusterOf clusterOf = [&](size_t i) -> const ClusterRender& { return clusters[i]; };
  // Gateway key → whether it is accepted (its class is, and it rendered a config); only Gateways
  // of our classes appear.
  std::map<k8s::ObjectKey, bool> ours;
  std::vector<StatusUpdate> gatewayStatuses;
  for (const k8s::GatewayClass& gc : snapshot.gatewayClasses()) {
    if (gc.controllerName != options.controllerName) continue;
    GatewayClassRender cls = renderGatewayClass(gc, snapshot, options);
    result.statuses.push_back(std::move(cls.status));
    for (const k8s::Gateway& gw : snapshot.gateways()) {
      if (gw.gatewayClassName != gc.meta.name) continue;
      GatewayRender r = renderClassGateway(gw, cls, snapshot, clusterOf, options);
      // A Gateway of an accepted class can still be rejected (its GatewayConfig's auth is
      // invalid): its routes must not read as accepted by it.
      ours[gw.meta.key()] = cls.problem.empty() && r.output.config.has_value();
      gatewayStatuses.push_back(
          {gw.meta.apiVersion, "Gateway", gw.meta.key(), std::move(r.status)});
      result.gateways.push_back(std::move(r.output));
    }
  }
  auto byKey = [](const auto& a, const auto& b) { return a.key < b.key; };
  std::stable_sort(gatewayStatuses.begin(), gatewayStatuses.end(), byKey);
  std::stable_sort(
      result.gateways.begin(), result.gateways.end(),
      [](const GatewayOutput& a, const GatewayOutput& b) { return a.gateway < b.gateway; });
  for (StatusUpdate& s : gatewayStatuses) result.statuses.push_back(std::move(s));

  for (size_t i = 0; i < snapshot.routes().size(); ++i) {
    if (auto status = renderRouteStatus(i, snapshot, ours, clusterOf, options)) {
      result.statuses.push_back(std::move(*status));
    }
  }
  return result;
}

GatewayRender renderClassGateway(const k8s::Gateway& gateway,
                                 const GatewayClassRender& gatewayClass,
                                 const ClusterSnapshot& snapshot, const ClusterOf& clusterOf,
                                 const RenderOptions& options) {
  if (!gatewayClass.problem.empty()) {
    return rejectGateway(gateway, reason::kInvalidParameters,
                         "GatewayClass " + gatewayClass.context.gatewayClass->meta.name + ": " +
                             gatewayClass.problem,
                         options);
  }
  return renderGateway(gateway, gatewayClass.context, snapshot, clusterOf, options);
}

}  // namespace kturn::op
