// Everything the renderer reads, decoded once: the typed views of a set of Kubernetes objects,
// indexed by kind and name. Built from a watch cache in the operator and from manifest files in
// `kturnctl render`; immutable once built.
//
// Every lookup and every whole-kind accessor below is also recorded, when a ReadLog is in force
// (ScopedReadLog), as a SnapshotRead (snapshot_read.h): that is how the incremental renderer
// learns what each Gateway's render depended on. Recording makes a const snapshot stateful, so
// a snapshot being recorded is for one thread at a time (the controller's reconcile thread).
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
#include "operator/snapshot_read.h"

namespace kturn::op {

class ClusterSnapshot {
 public:
  // Objects of kinds the renderer does not read are kept (objects()) but otherwise ignored. When
  // two objects have the same kind and name the later one wins, as with `kubectl apply`.
  static ClusterSnapshot fromObjects(std::vector<k8s::Object> objects);

  const std::vector<k8s::Object>& objects() const { return objects_; }

  // Sorted by name (namespace, then name), the order every output follows.
  const std::vector<k8s::GatewayClass>& gatewayClasses() const { return gatewayClasses_; }
  const std::vector<k8s::Gateway>& gateways() const;
  // STUNner UDPRoutes, then TCPRoutes, then Gateway API UDPRoutes, each sorted by name.
  const std::vector<k8s::Route>& routes() const;
  // routes()[i] for a position routesNaming() gave (which recorded the read), or findRoute().
  const k8s::Route& route(size_t i) const { return routes_[i]; }
  const std::vector<k8s::Node>& nodes() const;
  const std::vector<k8s::Service>& services() const;

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
  // The position in routes() of the route of this kind and name. An identity lookup for the
  // incremental renderer, outside any render: records nothing.
  std::optional<size_t> findRoute(k8s::RouteKind kind, const k8s::ObjectKey& key) const;
  // The Services annotated stunner.l7mp.io/related-gateway-name: <gateway>, in services() order.
  std::vector<const k8s::Service*> servicesRelatedTo(const k8s::ObjectKey& gateway) const;

  // Records every read into `log` until the returned previous log is put back; nullptr stops
  // recording. Use ScopedReadLog.
  ReadLog* readLog() const { return readLog_; }
  ReadLog* swapReadLog(ReadLog* log) const {
    ReadLog* previous = readLog_;
    readLog_ = log;
    return previous;
  }

  // A Gateway API UDPRoute with the name of a STUNner UDPRoute is masked by it: STUNner renders
  // only its own (udproute_util.go, isRouteMasked).
  bool isMasked(const k8s::Route& route) const;

 private:
  void buildIndexes();
  void recordRead(ReadKind kind, k8s::ObjectKey key) const {
    if (readLog_ != nullptr) readLog_->add(kind, std::move(key));
  }

  mutable ReadLog* readLog_ = nullptr;

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
  std::map<std::pair<k8s::RouteKind, k8s::ObjectKey>, size_t> routeIndex_;
  std::map<std::string, std::vector<size_t>> servicesByRelatedGateway_;  // by annotation value
};

// Records the reads of `snapshot` into `log` for its lifetime, then restores the log before.
class ScopedReadLog {
 public:
  ScopedReadLog(const ClusterSnapshot& snapshot, ReadLog& log)
      : snapshot_(snapshot), previous_(snapshot.swapReadLog(&log)) {}
  ~ScopedReadLog() { snapshot_.swapReadLog(previous_); }
  ScopedReadLog(const ScopedReadLog&) = delete;
  ScopedReadLog& operator=(const ScopedReadLog&) = delete;

 private:
  const ClusterSnapshot& snapshot_;
  ReadLog* const previous_;
};

}  // namespace kturn::op
