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

// The position of the item `rank` puts at `target` in a vector sorted by rank, and whether it is
// there.
template <class T, class Rank, class Target>
std::pair<size_t, bool> findSorted(const std::vector<T>& items, const Rank& rank,
                                   const Target& target) {
  auto it = std::partition_point(items.begin(), items.end(),
                                 [&](const T& item) { return rank(item) < target; });
  return {static_cast<size_t>(it - items.begin()), it != items.end() && rank(*it) == target};
}

// Puts `item` at a slot findSorted() gave (replacing what is there), or takes the slot's item
// out when `item` is nullopt. Returns whether the positions after it shifted.
template <class T>
bool setAt(std::vector<T>& items, std::pair<size_t, bool> slot, std::optional<T> item) {
  const auto [pos, present] = slot;
  if (item && present) {
    items[pos] = std::move(*item);
    return false;
  }
  if (item) {
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(pos), std::move(*item));
    return true;
  }
  if (!present) return false;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(pos));
  return true;
}

template <class Map, class Key, class Value>
void setMapped(Map& map, const Key& key, std::optional<Value> value) {
  if (value) {
    map.insert_or_assign(key, std::move(*value));
  } else {
    map.erase(key);
  }
}

// Adds or removes one position in an index of ascending positions, dropping emptied entries.
template <class Key>
void setPosition(std::map<Key, std::vector<size_t>>& index, const Key& key, size_t i, bool add) {
  if (add) {
    std::vector<size_t>& of = index[key];
    auto at = std::lower_bound(of.begin(), of.end(), i);
    if (at == of.end() || *at != i) of.insert(at, i);
    return;
  }
  auto entry = index.find(key);
  if (entry == index.end()) return;
  std::vector<size_t>& of = entry->second;
  auto at = std::lower_bound(of.begin(), of.end(), i);
  if (at != of.end() && *at == i) of.erase(at);
  if (of.empty()) index.erase(entry);
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
  for (const k8s::Object& o : objects) {
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
  for (k8s::Object& o : objects) {
    ObjectIdentity identity = ObjectIdentity::of(o);
    s.objects_.insert_or_assign(std::move(identity), std::move(o));
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

bool sameObjectVersion(const k8s::Object& a, const k8s::Object& b) {
  const std::string& rvA = a.meta().resourceVersion;
  const std::string& rvB = b.meta().resourceVersion;
  if (!rvA.empty() && !rvB.empty()) return rvA == rvB;
  return a.body() == b.body();
}

std::vector<ObjectChange> ClusterSnapshot::apply(std::vector<ObjectUpdate> updates) {
  std::vector<ObjectChange> out;
  Shifted shifted;
  for (ObjectUpdate& u : updates) {
    auto it = objects_.find(u.identity);
    if (it == objects_.end() && !u.object) continue;
    if (it != objects_.end() && u.object && sameObjectVersion(it->second, *u.object)) continue;
    ObjectChange change;
    if (it != objects_.end()) change.before = std::move(it->second);
    if (u.object) {
      change.after = *u.object;
      place(change.before ? &*change.before : nullptr, &*change.after, shifted);
      if (it != objects_.end()) {
        it->second = std::move(*u.object);
      } else {
        objects_.emplace(std::move(u.identity), std::move(*u.object));
      }
    } else {
      place(&*change.before, nullptr, shifted);
      objects_.erase(it);
    }
    out.push_back(std::move(change));
  }
  if (shifted.gateways) indexGateways();
  if (shifted.services) indexServices();
  if (shifted.slices) indexSlices();
  if (shifted.routes) indexRoutes();
  return out;
}

// The typed view of one object (`after`, or its removal when null), as fromObjects() decodes it.
void ClusterSnapshot::place(const k8s::Object* before, const k8s::Object* after, Shifted& shifted) {
  const k8s::Object& o = after != nullptr ? *after : *before;
  const std::string group = o.group();
  const std::string_view kind = o.kind();
  const k8s::ObjectKey key = o.key();
  auto byKey = [](const auto& item) { return item.meta.key(); };
  if (group == k8s::kGatewayGroup && kind == "GatewayClass") {
    setAt(gatewayClasses_, findSorted(gatewayClasses_, byKey, key),
          after ? std::optional(k8s::readGatewayClass(*after)) : std::nullopt);
  } else if (group == k8s::kGatewayGroup && kind == "Gateway") {
    shifted.gateways |= setAt(gateways_, findSorted(gateways_, byKey, key),
                              after ? std::optional(k8s::readGateway(*after)) : std::nullopt);
  } else if (group == k8s::kGatewayGroup && kind == "ReferenceGrant") {
    setAt(referenceGrants_, findSorted(referenceGrants_, byKey, key),
          after ? std::optional(k8s::readReferenceGrant(*after)) : std::nullopt);
  } else if (k8s::routeKindOf(o.meta())) {
    placeRoute(o, after, shifted);
  } else if (group == k8s::kStunnerGroup && kind == "GatewayConfig") {
    setMapped(gatewayConfigs_, key,
              after ? std::optional(k8s::readGatewayConfig(*after)) : std::nullopt);
  } else if (group == k8s::kStunnerGroup && kind == "Dataplane") {
    setMapped(dataplanes_, key.name,
              after ? std::optional(k8s::readDataplane(*after)) : std::nullopt);
  } else if (group == k8s::kStunnerGroup && kind == "StaticService") {
    setMapped(staticServices_, key,
              after ? std::optional(k8s::readStaticService(*after)) : std::nullopt);
  } else if (group.empty() && kind == "Service") {
    const auto slot = findSorted(services_, byKey, key);
    const bool inPlace = slot.second && after != nullptr && !shifted.services;
    if (inPlace) indexService(slot.first, false);
    shifted.services |=
        setAt(services_, slot, after ? std::optional(k8s::readService(*after)) : std::nullopt);
    if (inPlace) indexService(slot.first, true);
  } else if (group == "discovery.k8s.io" && kind == "EndpointSlice") {
    const auto slot = findSorted(endpointSlices_, byKey, key);
    const bool inPlace = slot.second && after != nullptr && !shifted.slices;
    if (inPlace) indexSlice(slot.first, false);
    shifted.slices |= setAt(endpointSlices_, slot,
                            after ? std::optional(k8s::readEndpointSlice(*after)) : std::nullopt);
    if (inPlace) indexSlice(slot.first, true);
  } else if (group.empty() && kind == "Secret") {
    setMapped(secrets_, key, after ? std::optional(k8s::readSecret(*after)) : std::nullopt);
  } else if (group.empty() && kind == "Node") {
    setAt(nodes_, findSorted(nodes_, byKey, key),
          after ? std::optional(k8s::readNode(*after)) : std::nullopt);
  } else if (group.empty() && kind == "Namespace") {
    setMapped(namespaces_, key.name, after ? std::optional(after->meta().labels) : std::nullopt);
  }
}

void ClusterSnapshot::placeRoute(const k8s::Object& o, const k8s::Object* after, Shifted& shifted) {
  const k8s::RouteKind routeKind = *k8s::routeKindOf(o.meta());
  auto rank = [](const k8s::Route& r) { return std::pair(routeOrder(r.routeKind), r.meta.key()); };
  const auto slot = findSorted(routes_, rank, std::pair(routeOrder(routeKind), o.key()));
  const bool inPlace = slot.second && after != nullptr && !shifted.routes;
  if (inPlace) indexRoute(slot.first, false);
  shifted.routes |=
      setAt(routes_, slot, after ? std::optional(k8s::readRoute(*after, routeKind)) : std::nullopt);
  if (inPlace) indexRoute(slot.first, true);
}

// Lookups the renderer makes per Gateway and per route: without these indexes a render of
// 1,000 Gateways took seconds (every Gateway scanned every route, and each of those scanned
// every route again for masking).
void ClusterSnapshot::buildIndexes() {
  indexGateways();
  indexServices();
  indexSlices();
  indexRoutes();
}

void ClusterSnapshot::indexGateways() {
  gatewayIndex_.clear();
  for (size_t i = 0; i < gateways_.size(); ++i) gatewayIndex_.emplace(gateways_[i].meta.key(), i);
}

void ClusterSnapshot::indexServices() {
  serviceIndex_.clear();
  servicesByRelatedGateway_.clear();
  for (size_t i = 0; i < services_.size(); ++i) {
    serviceIndex_.emplace(services_[i].meta.key(), i);
    indexService(i, true);
  }
}

void ClusterSnapshot::indexSlices() {
  slicesByService_.clear();
  for (size_t i = 0; i < endpointSlices_.size(); ++i) indexSlice(i, true);
}

void ClusterSnapshot::indexRoutes() {
  stunnerUdpRoutes_.clear();
  routeIndex_.clear();
  routesByParent_.clear();
  for (size_t i = 0; i < routes_.size(); ++i) {
    const k8s::Route& r = routes_[i];
    if (r.routeKind == k8s::RouteKind::kStunnerUdp) stunnerUdpRoutes_.insert(r.meta.key());
    routeIndex_.emplace(std::pair{r.routeKind, r.meta.key()}, i);
    indexRoute(i, true);
  }
}

// The content-derived index entries of one element, added or taken out (its position and key
// stay: a change in place).
void ClusterSnapshot::indexService(size_t i, bool add) {
  const k8s::Service& svc = services_[i];
  auto related = svc.meta.annotations.find(std::string(kRelatedGatewayName));
  if (related != svc.meta.annotations.end()) {
    setPosition(servicesByRelatedGateway_, related->second, i, add);
  }
}

void ClusterSnapshot::indexSlice(size_t i, bool add) {
  const k8s::EndpointSlice& es = endpointSlices_[i];
  setPosition(slicesByService_, k8s::ObjectKey{es.meta.ns, es.serviceName}, i, add);
}

void ClusterSnapshot::indexRoute(size_t i, bool add) {
  const k8s::Route& r = routes_[i];
  for (const k8s::ParentReference& p : r.parentRefs) {
    setPosition(routesByParent_, k8s::ObjectKey{p.ns.value_or(r.meta.ns), p.name}, i, add);
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
