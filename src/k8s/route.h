// Typed view of the routes kturn renders into clusters: STUNner's UDPRoute and TCPRoute
// (stunner.l7mp.io/v1) and the Gateway API's UDPRoute (gateway.networking.k8s.io/v1alpha2). They
// share one shape; STUNner's adds port/endPort on backendRefs (a peer port range).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "k8s/object.h"

namespace kturn::k8s {

enum class RouteKind {
  kStunnerUdp,  // stunner.l7mp.io/v1 UDPRoute
  kGatewayUdp,  // gateway.networking.k8s.io/v1alpha2 UDPRoute
  kStunnerTcp,  // stunner.l7mp.io/v1 TCPRoute
};

struct ParentReference {
  std::optional<std::string> group{};  // gateway.networking.k8s.io when omitted
  std::optional<std::string> kind{};   // Gateway when omitted
  std::optional<std::string> ns{};     // the route's namespace when omitted
  std::string name{};
  std::optional<std::string> sectionName{};  // a listener name
};

struct BackendRef {
  std::optional<std::string> group;   // core ("") when omitted
  std::optional<std::string> kind{};  // Service when omitted
  std::string name{};
  std::optional<std::string> ns{};  // the route's namespace when omitted
  std::optional<int64_t> port{};
  std::optional<int64_t> endPort{};
};

struct RouteRule {
  std::vector<BackendRef> backendRefs{};
};

struct Route {
  ObjectMeta meta{};
  RouteKind routeKind = RouteKind::kStunnerUdp;
  std::vector<ParentReference> parentRefs{};
  std::vector<RouteRule> rules{};
  std::vector<std::string> problems{};

  bool isTcp() const { return routeKind == RouteKind::kStunnerTcp; }
};

// nullopt when the object is not one of the route kinds above.
std::optional<RouteKind> routeKindOf(const ObjectMeta& meta);
Route readRoute(const Object& object, RouteKind kind);

}  // namespace kturn::k8s
