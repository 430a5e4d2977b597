// Everything the renderer reads, decoded once: the typed views of a set of Kubernetes objects,
// indexed by kind and name. Built from a watch cache in the operator and from manifest files in
// `kturnctl render`; immutable once built.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/core_api.h"
#include "k8s/gateway_api.h"
#include "k8s/object.h"
#include "k8s/route.h"
#include "k8s/stunner_api.h"

namespace kturn::op {

class ClusterSnapshot {
 public:
  // Objects of kinds the renderer does not read are kept (objects()) but otherwise ignored. When
  // two objects have the same kind and name the later one wins, as with `kubectl apply`.
  static ClusterSnapshot fromObjects(std::vector<k8s::Object> objects);

  const std::vector<k8s::Object>& objects() const { return objects_; }

  // Sorted by name (namespace, then name), the order every output follows.
  const std::vector<k8s::GatewayClass>& gatewayClasses() const { return gatewayClasses_; }
  const std::vector<k8s::Gateway>& gateways() const { return gateways_; }
  // STUNner UDPRoutes, then TCPRoutes, then Gateway API UDPRoutes, each sorted by name.
  const std::vector<k8s::Route>& routes() const { return routes_; }
  const std::vector<k8s::Node>& nodes() const { return nodes_; }
  const std::vector<k8s::Service>& services() const { return services_; }

  const k8s::Gateway* findGateway(const k8s::ObjectKey& key) const;
  const k8s::GatewayConfig* findGatewayConfig(const k8s::ObjectKey& key) const;
  const k8s::Dataplane* findDataplane(const std::string& name) const;
  const k8s::StaticService* findStaticService(const k8s::ObjectKey& key) const;
  const k8s::Service* findService(const k8s::ObjectKey& key) const;
  const k8s::Secret* findSecret(const k8s::ObjectKey& key) const;
  // Labels of a Namespace object, nullopt when the snapshot has none of that name.
  std::optional<k8s::StringMap> namespaceLabels(const std::string& name) const;
  // The slices labelled kubernetes.io/service-name=<name> in the Service's namespace.
  std::vector<const k8s::EndpointSlice*> endpointSlicesOf(const k8s::ObjectKey& service) const;
  // ReferenceGrants in a namespace.
  std::vector<const k8s::ReferenceGrant*> referenceGrantsIn(const std::string& ns) const;

  // Positions in routes() of the routes with a parentRef naming `gateway` (by namespace and
  // name only: whether it attaches is the renderer's call), ascending.
  const std::vector<size_t>& routesNaming(const k8s::ObjectKey& gateway) const;

  // A Gateway API UDPRoute with the name of a STUNner UDPRoute is masked by it: STUNner renders
  // only its own (udproute_util.go, isRouteMasked).
  bool isMasked(const k8s::Route& route) const;

 private:
  void buildIndexes();

  std::vector<k8s::Object> objects_;
  std::vector<k8s::GatewayClass> gatewayClasses_;
  std::vector<k8s::Gateway> gateways_;
  std::vector<k8s::Route> routes_;
  std::vector<k8s::Node> nodes_;
  std::vector<k8s::Service> services_;
  std::vector<k8s::EndpointSlice> endpointSlices_;
  std::vector<k8s::ReferenceGrant> referenceGrants_;
  std::map<k8s::ObjectKey, k8s::GatewayConfig> gatewayConfigs_;
  std::map<std::string, k8s::Dataplane> dataplanes_;
  std::map<k8s::ObjectKey, k8s::StaticService> staticServices_;
  std::map<k8s::ObjectKey, k8s::Secret> secrets_;
  std::map<std::string, k8s::StringMap> namespaces_;
  // Positions in the vectors above, built once they are final.
  std::map<k8s::ObjectKey, size_t> gatewayIndex_;
  std::map<k8s::ObjectKey, size_t> serviceIndex_;
  std::map<k8s::ObjectKey, std::vector<size_t>> slicesByService_;  // by service ns/name
  std::set<k8s::ObjectKey> stunnerUdpRoutes_;
  std::map<k8s::ObjectKey, std::vector<size_t>> routesByParent_;
};

}  // namespace kturn::op
