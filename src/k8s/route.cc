#include "k8s/route.h"

#include "k8s/field_reader.h"
#include "k8s/gateway_api.h"
#include "k8s/stunner_api.h"

namespace kturn::k8s {

std::optional<RouteKind> routeKindOf(const ObjectMeta& meta) {
  const std::string group = meta.group();
  if (group == kStunnerGroup && meta.kind == "UDPRoute") return RouteKind::kStunnerUdp;
  if (group == kStunnerGroup && meta.kind == "TCPRoute") return RouteKind::kStunnerTcp;
  if (group == kGatewayGroup && meta.kind == "UDPRoute") return RouteKind::kGatewayUdp;
  return std::nullopt;
}

Route readRoute(const Object& object, RouteKind kind) {
  Route route{.meta = object.meta(), .routeKind = kind};
  FieldReader r;
  const Json& spec = object.spec();
  if (const Json* parents = r.array(spec, "parentRefs", "spec")) {
    for (size_t i = 0; i < parents->size(); ++i) {
      const std::string path = indexPath("spec.parentRefs", i);
      const Json& p = (*parents)[i];
      route.parentRefs.push_back({.group = r.string(p, "group", path),
                                  .kind = r.string(p, "kind", path),
                                  .ns = r.string(p, "namespace", path),
                                  .name = r.string(p, "name", path).value_or(""),
                                  .sectionName = r.string(p, "sectionName", path)});
    }
  }
  if (const Json* rules = r.array(spec, "rules", "spec")) {
    for (size_t i = 0; i < rules->size(); ++i) {
      const std::string rulePath = indexPath("spec.rules", i);
      RouteRule rule;
      if (const Json* refs = r.array((*rules)[i], "backendRefs", rulePath)) {
        for (size_t j = 0; j < refs->size(); ++j) {
          const std::string path = indexPath(fieldPath(rulePath, "backendRefs"), j);
          const Json& b = (*refs)[j];
          BackendRef ref{.group = r.string(b, "group", path),
                         .kind = r.string(b, "kind", path),
                         .name = r.string(b, "name", path).value_or(""),
                         .ns = r.string(b, "namespace", path),
                         .port = r.integer(b, "port", path)};
          // The Gateway API's BackendRef has no endPort; STUNner's v1alpha2 conversion drops
          // port too, so only STUNner's own routes carry a port range.
          if (kind == RouteKind::kGatewayUdp) {
            ref.port.reset();
          } else {
            ref.endPort = r.integer(b, "endPort", path);
          }
          rule.backendRefs.push_back(std::move(ref));
        }
      }
      route.rules.push_back(std::move(rule));
    }
  }
  route.problems = r.takeProblems();
  return route;
}

}  // namespace kturn::k8s
