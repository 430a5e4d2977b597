#include "operator/watched_cluster.h"

namespace kturn::op {

std::vector<k8s::ResourceType> WatchedCluster::kinds() {
  namespace r = k8s::resources;
  return {r::gatewayClass(),
          r::gatewayConfig(),
          r::dataplane(),
          r::gateway(),
          r::stunnerUdpRoute(),
          r::gatewayUdpRoute(),
          r::stunnerTcpRoute(),
          r::staticService(),
          r::referenceGrant(),
          r::secret(),
          r::service(),
          r::endpointSlice(),
          r::node(),
          r::namespace_()};
}

Result<WatchedCluster::Listing> WatchedCluster::listOnce(k8s::ApiClient& client) {
  Listing out;
  for (const k8s::ResourceType& type : kinds()) {
    const std::string what = "list " + type.kind + " (" + type.apiVersion() + ")";
    Result<k8s::ApiResponse> response = client.list(type);
    if (!response) return makeError(response.error().code, what + ": " + response.error().message);
    if (response->status == 404) {
      out.notServed.push_back(type);
      continue;
    }
    if (!response->ok() || !response->body.is_object()) {
      return makeError(Error::Code::kIo,
                       what + ": " + response->describe() + (response->ok() ? ", not a list" : ""));
    }
    // Through a cache, as the informers store them: the same order, the same "last one wins".
    k8s::ObjectCache cache(type);
    cache.replace(k8s::listItems(response->body, type));
    for (k8s::Object& o : cache.snapshot()) out.objects.push_back(std::move(o));
  }
  return out;
}

WatchedCluster::WatchedCluster(k8s::ApiClient& client, std::function<void()> onChange,
                               k8s::InformerOptions options) {
  options.notServedIsEmpty = true;
  for (const k8s::ResourceType& type : kinds()) {
    caches_.push_back(std::make_unique<k8s::ObjectCache>(type));
    caches_.back()->trackChanges();
    informers_.push_back(std::make_unique<k8s::Informer>(
        client, *caches_.back(), [onChange](const k8s::ResourceType&) { onChange(); }, options));
  }
}

WatchedCluster::~WatchedCluster() { stop(); }

void WatchedCluster::start() {
  for (auto& informer : informers_) informer->start();
}

void WatchedCluster::stop() {
  for (auto& informer : informers_) informer->stop();
}

bool WatchedCluster::synced() const {
  for (const auto& cache : caches_) {
    if (!cache->synced()) return false;
  }
  return true;
}

std::vector<k8s::Object> WatchedCluster::snapshot() const {
  std::vector<k8s::Object> out;
  for (const auto& cache : caches_) {
    for (k8s::Object& o : cache->snapshot()) out.push_back(std::move(o));
  }
  return out;
}

std::vector<ObjectUpdate> WatchedCluster::takeChanges() {
  std::vector<ObjectUpdate> out;
  for (const auto& cache : caches_) {
    const k8s::ResourceType& type = cache->type();
    for (k8s::CachedChange& c : cache->takeChanges()) {
      out.push_back({{type.apiVersion(), type.kind, std::move(c.key)}, std::move(c.object)});
    }
  }
  return out;
}

std::optional<k8s::Object> WatchedCluster::find(const std::string& apiVersion,
                                                const std::string& kind,
                                                const k8s::ObjectKey& key) const {
  const k8s::ResourceType* type = k8s::findResourceType(apiVersion, kind);
  if (type == nullptr) return std::nullopt;
  for (const auto& cache : caches_) {
    if (cache->type().group == type->group && cache->type().plural == type->plural) {
      return cache->get(key);
    }
  }
  return std::nullopt;
}

}  // namespace kturn::op
