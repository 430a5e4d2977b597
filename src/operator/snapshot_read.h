// What a render read from the ClusterSnapshot, for the incremental renderer
// (incremental_renderer.h): every lookup the snapshot answers is one SnapshotRead, recorded into
// the ReadLog in force while a Gateway or a route status renders, found or not (a later add of
// the object must reach the render that looked for it). The other half, readsReachedBy(), names
// the reads a changed object can alter; a render is redone when the two meet.
//
// The pairing is the whole correctness argument, so both halves live here: a new lookup in
// ClusterSnapshot needs a ReadKind, and readsReachedBy() must name it for every kind whose
// objects the lookup returns.
#pragma once

#include <compare>
#include <optional>
#include <vector>

#include "k8s/object.h"

namespace kturn::op {

enum class ReadKind {
  kGateway,            // findGateway(key)
  kGatewayConfig,      // findGatewayConfig(key)
  kDataplane,          // findDataplane(name): key {"", name}
  kStaticService,      // findStaticService(key)
  kService,            // findService(key)
  kSecret,             // findSecret(key)
  kNamespace,          // namespaceLabels(name): key {"", name}
  kEndpointSlicesOf,   // endpointSlicesOf(service): key of the Service
  kReferenceGrantsIn,  // referenceGrantsIn(ns): key {ns, ""}
  kRoutesNaming,       // routesNaming(gateway): key of the Gateway
  kStunnerUdpRoute,    // isMasked(route): key of the route
  kServicesRelatedTo,  // servicesRelatedTo(gateway): key of the Gateway
  kNodes,              // nodes(): key {}
  kAllGateways,        // gateways(): key {}
  kAllRoutes,          // routes(): key {}
  kAllServices,        // services(): key {}
};

struct SnapshotRead {
  ReadKind kind = ReadKind::kGateway;
  k8s::ObjectKey key{};

  friend auto operator<=>(const SnapshotRead&, const SnapshotRead&) = default;
  friend bool operator==(const SnapshotRead&, const SnapshotRead&) = default;
};

// The reads of one render, in the order made (duplicates kept: the index folds them).
class ReadLog {
 public:
  void add(ReadKind kind, k8s::ObjectKey key) { reads_.push_back({kind, std::move(key)}); }
  void append(const std::vector<SnapshotRead>& reads) {
    reads_.insert(reads_.end(), reads.begin(), reads.end());
  }
  const std::vector<SnapshotRead>& reads() const { return reads_; }
  std::vector<SnapshotRead> take() { return std::move(reads_); }

 private:
  std::vector<SnapshotRead> reads_;
};

// The reads whose answer an add, update or delete of `object` can change, judged from one
// version of it (the caller passes the old and the new). nullopt for the kinds every Gateway
// depends on through its class (GatewayClass, GatewayConfig, Dataplane): those call for a full
// render. An object of a kind the renderer does not read reaches nothing.
std::optional<std::vector<SnapshotRead>> readsReachedBy(const k8s::Object& object);

}  // namespace kturn::op
