#include "operator/cluster_snapshot.h"

#include <algorithm>

#include "operator/well_known.h"

namespace kturn::op {
namespace {

template <class T>
void sortByKey(std::vector<T>& items) {
  std::stable_sort(items.begin(), items.end(),
                   [](const T& a, const T& b) { return a.meta.key() < b.meta.key(); });
}

// Later objects replace earlier ones with the same key, as a later `kubectl apply` would.
// O(n log n): a cluster has thousands of EndpointSlices.
template <class T>
void dedupeByKey(std::vector<T>& items) {
  std::vector<T> out;
  std::map<k8s::ObjectKey, size_t> seen;
  for (T& item : items) {
    auto [it, fresh] = seen.try_emplace(item.meta.key(), out.size());
    if (fresh) {
      out.push_back(std::move(item));
    } else {
      out[it->second] = std::move(item);
    }
  }
  items = std::move(out);
}

int routeOrder(k8s::RouteKind kind) {
  switch (kind) {
    case k8s::RouteKind::kStunnerUdp:
      return 0;
    case k8s::RouteKind::kStunnerTcp:
      return 1;
    case k8s::RouteKind::kGatewayUdp:
      return 2;
  }
  return 3;
}

}  // namespace

ClusterSnapshot ClusterSnapshot::fromObjects(std::vector<k8s::Object> objects) {
  ClusterSnapshot s;
  s.objects_ = std::move(objects);
  for (const k8s::Object& o : s.objects_) {
    const std::string group = o.group();
    const std::string_view kind = o.kind();
    if (group == k8s::kGatewayGroup && kind == "GatewayClass") {
      s.gatewayClasses_.push_back(k8s::readGatewayClass(o));
    } else if (group == k8s::kGatewayGroup && kind == "Gateway") {
      s.gateways_.push_back(k8s::readGateway(o));
    } else if (group == k8s::kGatewayGroup && kind == "ReferenceGrant") {
      s.referenceGrants_.push_back(k8s::readReferenceGrant(o));
    } else if (auto routeKind = k8s::routeKindOf(o.meta())) {
      s.routes_.push_back(k8s::readRoute(o, *routeKind));
    } else if (group == k8s::kStunnerGroup && kind == "GatewayConfig") {
      s.gatewayConfigs_[o.key()] = k8s::readGatewayConfig(o);
    } else if (group == k8s::kStunnerGroup && kind == "Dataplane") {
      s.dataplanes_[o.name()] = k8s::readDataplane(o);
    } else if (group == k8s::kStunnerGroup && kind == "StaticService") {
      s.staticServices_[o.key()] = k8s::readStaticService(o);
    } else if (group.empty() && kind == "Service") {
      s.services_.push_back(k8s::readService(o));
    } else if (group == "discovery.k8s.io" && kind == "EndpointSlice") {
      s.endpointSlices_.push_back(k8s::readEndpointSlice(o));
    } else if (group.empty() && kind == "Secret") {
      s.secrets_[o.key()] = k8s::readSecret(o);
    } else if (group.empty() && kind == "Node") {
      s.nodes_.push_back(k8s::readNode(o));
    } else if (group.empty() && kind == "Namespace") {
      s.namespaces_[o.name()] = o.meta().labels;
    }
  }
  dedupeByKey(s.gatewayClasses_);
  dedupeByKey(s.gateways_);
  dedupeByKey(s.services_);
  dedupeByKey(s.endpointSlices_);
  dedupeByKey(s.nodes_);
  dedupeByKey(s.referenceGrants_);
  sortByKey(s.gatewayClasses_);
  sortByKey(s.gateways_);
  sortByKey(s.services_);
  sortByKey(s.endpointSlices_);
  sortByKey(s.nodes_);
  sortByKey(s.referenceGrants_);
  // Routes of different kinds may share a name: dedupe and sort within a kind.
  std::vector<k8s::Route> routes;
  for (int order = 0; order < 3; ++order) {
    std::vector<k8s::Route> ofKind;
    for (k8s::Route& r : s.routes_) {
      if (routeOrder(r.routeKind) == order) ofKind.push_back(std::move(r));
    }
    dedupeByKey(ofKind);
    sortByKey(ofKind);
    for (k8s::Route& r : ofKind) routes.push_back(std::move(r));
  }
  s.routes_ = std::move(routes);
  s.buildIndexes();
  return s;
}

// Lookups the renderer makes per Gateway and per route: without these indexes a render of
// 1,000 Gateways took seconds (every Gateway scanned every route, and each of those scanned
// every route again for masking).
void ClusterSnapshot::buildIndexes() {
  for (size_t i = 0; i < gateways_.size(); ++i) gatewayIndex_.emplace(gateways_[i].meta.key(), i);
  for (size_t i = 0; i < services_.size(); ++i) {
    const k8s::Service& svc = services_[i];
    serviceIndex_.emplace(svc.meta.key(), i);
    auto related = svc.meta.annotations.find(std::string(kRelatedGatewayName));
    if (related != svc.meta.annotations.end()) {
      servicesByRelatedGateway_[related->second].push_back(i);
    }
  }
  for (size_t i = 0; i < endpointSlices_.size(); ++i) {
    const k8s::EndpointSlice& es = endpointSlices_[i];
    slicesByService_[{es.meta.ns, es.serviceName}].push_back(i);
  }
  for (size_t i = 0; i < routes_.size(); ++i) {
    const k8s::Route& r = routes_[i];
    if (r.routeKind == k8s::RouteKind::kStunnerUdp) stunnerUdpRoutes_.insert(r.meta.key());
    routeIndex_.emplace(std::pair{r.routeKind, r.meta.key()}, i);
    for (const k8s::ParentReference& p : r.parentRefs) {
      std::vector<size_t>& of = routesByParent_[{p.ns.value_or(r.meta.ns), p.name}];
      if (of.empty() || of.back() != i) of.push_back(i);
    }
  }
}

const std::vector<k8s::Gateway>& ClusterSnapshot::gateways() const {
  recordRead(ReadKind::kAllGateways, {});
  return gateways_;
}

const std::vector<k8s::Route>& ClusterSnapshot::routes() const {
  recordRead(ReadKind::kAllRoutes, {});
  return routes_;
}

const std::vector<k8s::Node>& ClusterSnapshot::nodes() const {
  recordRead(ReadKind::kNodes, {});
  return nodes_;
}

const std::vector<k8s::Service>& ClusterSnapshot::services() const {
  recordRead(ReadKind::kAllServices, {});
  return services_;
}

std::optional<size_t> ClusterSnapshot::findRoute(k8s::RouteKind kind,
                                                 const k8s::ObjectKey& key) const {
  auto it = routeIndex_.find({kind, key});
  if (it == routeIndex_.end()) return std::nullopt;
  return it->second;
}

std::vector<const k8s::Service*> ClusterSnapshot::servicesRelatedTo(
    const k8s::ObjectKey& gateway) const {
  recordRead(ReadKind::kServicesRelatedTo, gateway);
  std::vector<const k8s::Service*> out;
  auto it = servicesByRelatedGateway_.find(gateway.str());
  if (it == servicesByRelatedGateway_.end()) return out;
  for (const size_t i : it->second) out.push_back(&services_[i]);
  return out;
}

const std::vector<size_t>& ClusterSnapshot::routesNaming(const k8s::ObjectKey& gateway) const {
  static const std::vector<size_t> kNone;
  recordRead(ReadKind::kRoutesNaming, gateway);
  auto it = routesByParent_.find(gateway);
  return it == routesByParent_.end() ? kNone : it->second;
}

const k8s::Gateway* ClusterSnapshot::findGateway(const k8s::ObjectKey& key) const {
  recordRead(ReadKind::kGateway, key);
  auto it = gatewayIndex_.find(key);
  return it == gatewayIndex_.end() ? nullptr : &gateways_[it->second];
}

const k8s::GatewayConfig* ClusterSnapshot::findGatewayConfig(const k8s::ObjectKey& key) const {
  recordRead(ReadKind::kGatewayConfig, key);
  auto it = gatewayConfigs_.find(key);
  return it == gatewayConfigs_.end() ? nullptr : &it->second;
}

const k8s::Dataplane* ClusterSnapshot::findDataplane(const std::string& name) const {
  recordRead(ReadKind::kDataplane, {"", name});
  auto it = dataplanes_.find(name);
  return it == dataplanes_.end() ? nullptr : &it->second;
}

const k8s::StaticService* ClusterSnapshot::findStaticService(const k8s::ObjectKey& key) const {
  recordRead(ReadKind::kStaticService, key);
  auto it = staticServices_.find(key);
  return it == staticServices_.end() ? nullptr : &it->second;
}

const k8s::Service* ClusterSnapshot::findService(const k8s::ObjectKey& key) const {
  recordRead(ReadKind::kService, key);
  auto it = serviceIndex_.find(key);
  return it == serviceIndex_.end() ? nullptr : &services_[it->second];
}

const k8s::Secret* ClusterSnapshot::findSecret(const k8s::ObjectKey& key) const {
  recordRead(ReadKind::kSecret, key);
  auto it = secrets_.find(key);
  return it == secrets_.end() ? nullptr : &it->second;
}

std::optional<k8s::StringMap> ClusterSnapshot::namespaceLabels(const std::string& name) const {
  recordRead(ReadKind::kNamespace, {"", name});
  auto it = namespaces_.find(name);
  if (it == namespaces_.end()) return std::nullopt;
  return it->second;
}

std::vector<const k8s::EndpointSlice*> ClusterSnapshot::endpointSlicesOf(
    const k8s::ObjectKey& service) const {
  std::vector<const k8s::EndpointSlice*> out;
  recordRead(ReadKind::kEndpointSlicesOf, service);
  auto it = slicesByService_.find(service);
  if (it == slicesByService_.end()) return out;
  for (const size_t i : it->second) out.push_back(&endpointSlices_[i]);
  return out;
}

std::vector<const k8s::ReferenceGrant*> ClusterSnapshot::referenceGrantsIn(
    const std::string& ns) const {
  std::vector<const k8s::ReferenceGrant*> out;
  recordRead(ReadKind::kReferenceGrantsIn, {ns, ""});
  for (const k8s::ReferenceGrant& rg : referenceGrants_) {
    if (rg.meta.ns == ns) out.push_back(&rg);
  }
  return out;
}

bool ClusterSnapshot::isMasked(const k8s::Route& route) const {
  if (route.routeKind != k8s::RouteKind::kGatewayUdp) return false;
  recordRead(ReadKind::kStunnerUdpRoute, route.meta.key());
  return stunnerUdpRoutes_.contains(route.meta.key());
}

}  // namespace kturn::op
