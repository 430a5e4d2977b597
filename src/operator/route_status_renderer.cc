#include "operator/route_status_renderer.h"

#include <algorithm>

#include "operator/condition.h"
#include "operator/route_attachment.h"

namespace kturn::op {
namespace {

using k8s::Json;

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
      // Why the listener the parentRef names (or the first) refuses the route.
      std::string why;
      const auto named = std::find_if(
          gw->listeners.begin(), gw->listeners.end(),
          [&](const k8s::GatewayListener& l) { return p.sectionName && l.name == *p.sectionName; });
      if (p.sectionName && named == gw->listeners.end()) {
        why = "sectionName " + *p.sectionName + ": the Gateway has no listener of that name";
      } else if (!gw->listeners.empty()) {
        why = rejectReason(route, p, *gw, p.sectionName ? *named : gw->listeners[0], snapshot);
      }
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

std::optional<StatusUpdate> renderRouteStatus(size_t index, const ClusterSnapshot& snapshot,
                                              const std::map<k8s::ObjectKey, bool>& ours,
                                              const ClusterOf& clusterOf,
                                              const RenderOptions& options) {
  const k8s::Route& route = snapshot.route(index);
  const bool controlled =
      std::any_of(route.parentRefs.begin(), route.parentRefs.end(), [&](const auto& p) {
        const k8s::Gateway* gw = parentGateway(route, p, snapshot);
        return gw != nullptr && ours.contains(gw->meta.key());
      });
  if (!controlled) return std::nullopt;
  return StatusUpdate{route.meta.apiVersion, kindOf(route), route.meta.key(),
                      routeStatus(route, clusterOf(index), snapshot, ours, options)};
}

}  // namespace kturn::op
