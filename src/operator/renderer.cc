#include "operator/renderer.h"

#include <algorithm>
#include <map>

#include "operator/cluster_renderer.h"
#include "operator/condition.h"
#include "operator/deployment_renderer.h"
#include "operator/gateway_renderer.h"
#include "operator/route_attachment.h"

namespace kturn::op {
namespace {

using k8s::Json;

// Why a GatewayClass cannot be used, "" when it can (gatewayclass_util.go validateGatewayClass,
// gatewayconfig_util.go, dataplane_util.go getDataplane).
std::string resolveClass(const k8s::GatewayClass& gc, const ClusterSnapshot& snapshot,
                         const RenderOptions& options, ClassContext& ctx) {
  if (!gc.problems.empty()) return gc.problems[0];
  if (!gc.parametersRef) return "spec.parametersRef: required, must name a GatewayConfig";
  const k8s::ParametersReference& ref = *gc.parametersRef;
  if (ref.group != k8s::kStunnerGroup) {
    return "spec.parametersRef.group \"" + ref.group + "\": must be stunner.l7mp.io";
  }
  if (ref.kind != "GatewayConfig") {
    return "spec.parametersRef.kind \"" + ref.kind + "\": must be GatewayConfig";
  }
  if (ref.name.empty()) return "spec.parametersRef.name: required";
  if (!ref.ns || ref.ns->empty()) return "spec.parametersRef.namespace: required";
  const k8s::ObjectKey key{*ref.ns, ref.name};
  ctx.gatewayConfig = snapshot.findGatewayConfig(key);
  if (ctx.gatewayConfig == nullptr) return "GatewayConfig " + key.str() + " not found";
  if (!ctx.gatewayConfig->problems.empty()) {
    return "GatewayConfig " + key.str() + ": " + ctx.gatewayConfig->problems[0];
  }
  const std::string dpName =
      ctx.gatewayConfig->dataplane.value_or(std::string(kDefaultDataplaneName));
  if (const k8s::Dataplane* dp = snapshot.findDataplane(dpName)) {
    if (!dp->problems.empty()) return "Dataplane " + dpName + ": " + dp->problems[0];
    ctx.dataplane = *dp;
  } else if (dpName == kDefaultDataplaneName) {
    ctx.dataplane = builtinDataplane(options);
  } else {
    return "Dataplane " + dpName + " not found (named by GatewayConfig " + key.str() + ")";
  }
  return "";
}

Json classStatus(const k8s::GatewayClass& gc, const std::string& problem,
                 const RenderOptions& options) {
  Conditions c;
  if (problem.empty()) {
    c.set(
        {.type = std::string(cond::kAccepted),
         .status = ConditionStatus::kTrue,
         .reason = std::string(reason::kAccepted),
         .message = "GatewayClass is now managed by controller \"" + options.controllerName + "\"",
         .observedGeneration = gc.meta.generation});
  } else {
    c.set({.type = std::string(cond::kAccepted),
           .status = ConditionStatus::kFalse,
           .reason = std::string(reason::kInvalidParameters),
           .message = problem,
           .observedGeneration = gc.meta.generation});
  }
  return {{"conditions", c.toJson(options.transitionTime)}};
}

std::string kindOf(const k8s::Route& r) { return r.isTcp() ? "TCPRoute" : "UDPRoute"; }

Json parentRefJson(const k8s::ParentReference& p) {
  // As STUNner echoes it: group and kind only when not the Gateway defaults.
  Json j = Json::object();
  if (p.group && *p.group != k8s::kGatewayGroup) j["group"] = *p.group;
  if (p.kind && *p.kind != "Gateway") j["kind"] = *p.kind;
  j["name"] = p.name;
  if (p.ns) j["namespace"] = *p.ns;
  if (p.sectionName) j["sectionName"] = *p.sectionName;
  return j;
}

Condition routeCondition(const k8s::Route& r, std::string_view type, ConditionStatus status,
                         std::string_view why, std::string message) {
  return {.type = std::string(type),
          .status = status,
          .reason = std::string(why),
          .message = std::move(message),
          .observedGeneration = r.meta.generation};
}

Json routeStatus(const k8s::Route& route, const ClusterRender& cluster,
                 const ClusterSnapshot& snapshot, const std::map<k8s::ObjectKey, bool>& ours,
                 const RenderOptions& options) {
  Json parents = Json::array();
  for (const k8s::ParentReference& p : route.parentRefs) {
    const k8s::Gateway* gw = parentGateway(route, p, snapshot);
    // Parents of other controllers keep their own status entries.
    if (gw != nullptr && !ours.contains(gw->meta.key())) continue;
    const std::string id = p.ns.value_or(route.meta.ns) + "/" + p.name;
    Conditions c;
    if (snapshot.isMasked(route)) {
      c.set(routeCondition(route, cond::kAccepted, ConditionStatus::kFalse, reason::kPending,
                           "masked by the stunner.l7mp.io/v1 UDPRoute of the same name"));
    } else if (!route.problems.empty()) {
      c.set(routeCondition(route, cond::kAccepted, ConditionStatus::kFalse,
                           reason::kUnsupportedValue, route.problems[0]));
    } else if (gw == nullptr) {
      c.set(routeCondition(route, cond::kAccepted, ConditionStatus::kFalse,
                           reason::kNoMatchingParent, "parent " + id + " does not exist"));
    } else if (!ours.at(gw->meta.key())) {
      c.set(routeCondition(route, cond::kAccepted, ConditionStatus::kFalse, reason::kPending,
                           "parent " + id + " is not accepted"));
    } else if (parentAccepts(route, p, *gw, snapshot)) {
      c.set(routeCondition(route, cond::kAccepted, ConditionStatus::kTrue, reason::kAccepted,
                           "parent " + id + " accepted the route"));
    } else {
      std::string why;
      if (!gw->listeners.empty()) why = rejectReason(route, p, *gw, gw->listeners[0], snapshot);
      c.set(routeCondition(
          route, cond::kAccepted, ConditionStatus::kFalse, reason::kNotAllowedByListeners,
          "parent " + id + " rejects the route" + (why.empty() ? "" : ": " + why)));
    }
    if (snapshot.isMasked(route)) {
      // Not rendered, so nothing was resolved: no ResolvedRefs claim either way.
    } else if (cluster.resolved()) {
      c.set(routeCondition(route, cond::kResolvedRefs, ConditionStatus::kTrue,
                           reason::kResolvedRefs, "all backend references successfully resolved"));
    } else {
      c.set(routeCondition(route, cond::kResolvedRefs, ConditionStatus::kFalse, cluster.reason,
                           cluster.message));
    }
    parents.push_back({{"parentRef", parentRefJson(p)},
                       {"controllerName", options.controllerName},
                       {"conditions", c.toJson(options.transitionTime)}});
  }
  return {{"parents", std::move(parents)}};
}

}  // namespace

RenderResult render(const ClusterSnapshot& snapshot, const RenderOptions& options) {
  RenderResult result;
  std::vector<ClusterRender> clusters;
  for (const k8s::Route& route : snapshot.routes()) {
    clusters.push_back(renderCluster(route, snapshot, options));
  }
  // Gateway key → whether it is accepted (its class is, and it rendered a config); only Gateways
  // of our classes appear.
  std::map<k8s::ObjectKey, bool> ours;
  std::vector<StatusUpdate> gatewayStatuses;
  for (const k8s::GatewayClass& gc : snapshot.gatewayClasses()) {
    if (gc.controllerName != options.controllerName) continue;
    ClassContext ctx{.gatewayClass = &gc};
    const std::string problem = resolveClass(gc, snapshot, options, ctx);
    result.statuses.push_back(
        {gc.meta.apiVersion, "GatewayClass", gc.meta.key(), classStatus(gc, problem, options)});
    for (const k8s::Gateway& gw : snapshot.gateways()) {
      if (gw.gatewayClassName != gc.meta.name) continue;
      GatewayRender r =
          problem.empty() ? renderGateway(gw, ctx, snapshot, clusters, options)
                          : rejectGateway(gw, reason::kInvalidParameters,
                                          "GatewayClass " + gc.meta.name + ": " + problem, options);
      // A Gateway of an accepted class can still be rejected (its GatewayConfig's auth is
      // invalid): its routes must not read as accepted by it.
      ours[gw.meta.key()] = problem.empty() && r.output.config.has_value();
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

  const auto& routes = snapshot.routes();
  for (size_t i = 0; i < routes.size(); ++i) {
    const k8s::Route& route = routes[i];
    const bool controlled =
        std::any_of(route.parentRefs.begin(), route.parentRefs.end(), [&](const auto& p) {
          const k8s::Gateway* gw = parentGateway(route, p, snapshot);
          return gw != nullptr && ours.contains(gw->meta.key());
        });
    if (!controlled) continue;
    result.statuses.push_back({route.meta.apiVersion, kindOf(route), route.meta.key(),
                               routeStatus(route, clusters[i], snapshot, ours, options)});
  }
  return result;
}

}  // namespace kturn::op
