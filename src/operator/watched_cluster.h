// The operator's view of the cluster: one Informer and ObjectCache per kind the renderer reads
// (issue 6: GatewayClass, Gateway, both UDPRoutes, TCPRoute, GatewayConfig, Dataplane,
// StaticService, Secret, Service, EndpointSlice, Node, plus Namespace and ReferenceGrant for
// cross-namespace backends). A kind the API server does not serve (a CRD not installed) reads as
// empty, so that one missing CRD does not stop every Gateway from being rendered.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/informer.h"
#include "k8s/object_cache.h"
#include "kturn/result.h"
#include "operator/cluster_snapshot.h"

namespace kturn::op {

class WatchedCluster {
 public:
  // `onChange` runs on an informer thread after any cache changed; it must not block.
  WatchedCluster(k8s::ApiClient& client, std::function<void()> onChange,
                 k8s::InformerOptions options = {});
  ~WatchedCluster();  // stop()
  WatchedCluster(const WatchedCluster&) = delete;
  WatchedCluster& operator=(const WatchedCluster&) = delete;

  // The kinds, in the order they are listed.
  static std::vector<k8s::ResourceType> kinds();

  // Every kind listed once and not watched: what snapshot() holds once synced(), in the same
  // order, for a one-shot render (`kturnctl render --kubeconfig`). Only GETs. A kind not served
  // (404) reads as empty, as here, and is named in `notServed`; any other failure (transport,
  // 401, 403, 5xx, a body that is no list) stops the listing with an error naming the kind.
  struct Listing {
    std::vector<k8s::Object> objects;
    std::vector<k8s::ResourceType> notServed;
  };
  static Result<Listing> listOnce(k8s::ApiClient& client);

  void start();
  void stop();
  // Every kind listed at least once: until then a render would see a partial cluster and remove
  // configs that exist.
  bool synced() const;
  // Every cached object of every kind.
  std::vector<k8s::Object> snapshot() const;
  // The objects added, updated or deleted in any cache (by a watch event or a relist) since the
  // last call, each as it is now: what ClusterSnapshot::apply() takes. A change made while this
  // runs is in this answer or the next. Call it before snapshot() when rendering from scratch,
  // so that nothing the copy misses is lost.
  std::vector<ObjectUpdate> takeChanges();
  // The cached object of a kind, for status writes that compare with what is there.
  std::optional<k8s::Object> find(const std::string& apiVersion, const std::string& kind,
                                  const k8s::ObjectKey& key) const;

 private:
  std::vector<std::unique_ptr<k8s::ObjectCache>> caches_;
  std::vector<std::unique_ptr<k8s::Informer>> informers_;
};

}  // namespace kturn::op
