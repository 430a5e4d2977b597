// Everything the renderer reads, decoded once: the typed views of a set of Kubernetes objects,
// indexed by kind and name. Built from a watch cache in the operator and from manifest files in
// `kturnctl render`. Immutable while a render reads it; between renders the operator brings it
// up to date in place with apply() (issue 26: a copy and decode of every cached object per
// change cost 35-45 ms at 1,000 Gateways), and builds it again from scratch (fromObjects) for
// the first render and the resync. The two must agree: the tests check that they do.
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

// An object's identity across snapshots: apiVersion, kind, namespace and name.
struct ObjectIdentity {
  std::string apiVersion{};
  std::string kind{};
  k8s::ObjectKey key{};

  static ObjectIdentity of(const k8s::Object& o) {
    return {std::string(o.apiVersion()), std::string(o.kind()), o.key()};
  }
  friend auto operator<=>(const ObjectIdentity&, const ObjectIdentity&) = default;
  friend bool operator==(const ObjectIdentity&, const ObjectIdentity&) = default;
};

// One object as it is now: `object` added or updated, or nullopt when `identity` is gone.
struct ObjectUpdate {
  ObjectIdentity identity{};
  std::optional<k8s::Object> object{};
};

// What an applied update changed: the object's previous version and its new one (nullopt for
// absent), for the incremental renderer to find what they reach.
struct ObjectChange {
  std::optional<k8s::Object> before{};
  std::optional<k8s::Object> after{};
};

class ClusterSnapshot {
 public:
  // Objects of kinds the renderer does not read are kept (objects()) but otherwise ignored. When
  // two objects have the same kind and name the later one wins, as with `kubectl apply`.
  static ClusterSnapshot fromObjects(std::vector<k8s::Object> objects);

  // Brings the snapshot up to date in place: each update replaces, adds or removes one object
  // and its typed view. Work per update is a lookup and the object's own decode; an add or a
  // removal of a Gateway, Service, EndpointSlice or route also shifts that kind's vector and
  // rebuilds that kind's position indexes (no decode, no copy of other objects). Returns the
  // updates that changed something (an equal resourceVersion, else equal content, does not).
  // For snapshots of watch caches, where a kind comes in one apiVersion: the typed views are
  // keyed by kind and name, as fromObjects() dedupes them.
  std::vector<ObjectChange> apply(std::vector<ObjectUpdate> updates);

  // Every object by identity (of two with one identity, the later).
  const std::map<ObjectIdentity, k8s::Object>& objects() const { return objects_; }

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
  // Kinds whose vectors shifted during an apply(): their position indexes are rebuilt after it.
  struct Shifted {
    bool gateways = false;
    bool services = false;
    bool slices = false;
    bool routes = false;
  };
  void place(const k8s::Object* before, const k8s::Object* after, Shifted& shifted);
  void placeRoute(const k8s::Object& o, const k8s::Object* after, Shifted& shifted);
  void buildIndexes();
  void indexGateways();
  void indexServices();
  void indexSlices();
  void indexRoutes();
  void indexService(size_t i, bool add);
  void indexSlice(size_t i, bool add);
  void indexRoute(size_t i, bool add);
  void recordRead(ReadKind kind, k8s::ObjectKey key) const {
    if (readLog_ != nullptr) readLog_->add(kind, std::move(key));
  }

  mutable ReadLog* readLog_ = nullptr;

  std::map<ObjectIdentity, k8s::Object> objects_;
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

// Whether two versions of an object are the same: equal resourceVersions when both have one,
// else equal content.
bool sameObjectVersion(const k8s::Object& a, const k8s::Object& b);

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
