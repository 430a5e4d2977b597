// A kind of object served by the API server and the REST paths it lives at
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-uris).
#pragma once

#include <string>
#include <string_view>

namespace kturn::k8s {

struct ResourceType {
  std::string group{};  // "" for the core group
  std::string version{};
  std::string kind{};
  std::string plural{};
  bool namespaced = true;

  // "v1" or "<group>/<version>".
  std::string apiVersion() const;
  // /api/v1[/namespaces/<ns>]/<plural>, or /apis/<group>/<version>/...; `ns` empty: all
  // namespaces (or a cluster-scoped kind).
  std::string collectionPath(std::string_view ns = {}) const;
  // The collection path, then /<name>, then /<subresource> when not empty.
  std::string objectPath(std::string_view ns, std::string_view name,
                         std::string_view subresource = {}) const;
};

// The kinds kturn reads and writes.
namespace resources {
ResourceType gatewayClass();
ResourceType gateway();
ResourceType gatewayUdpRoute();  // gateway.networking.k8s.io/v1alpha2
ResourceType referenceGrant();
ResourceType stunnerUdpRoute();  // stunner.l7mp.io/v1
ResourceType stunnerTcpRoute();
ResourceType gatewayConfig();
ResourceType dataplane();
ResourceType staticService();
ResourceType secret();
ResourceType service();
ResourceType endpointSlice();
ResourceType node();
ResourceType namespace_();
ResourceType deployment();
ResourceType daemonSet();
ResourceType lease();
ResourceType pod();
ResourceType replicaSet();
ResourceType networkPolicy();
// The review APIs kturn-operator asks about CDS clients (operator/cds_authorizer.h).
ResourceType tokenReview();
ResourceType subjectAccessReview();
}  // namespace resources

// The type of an object by apiVersion and kind, among those above; nullptr when unknown.
const ResourceType* findResourceType(std::string_view apiVersion, std::string_view kind);

}  // namespace kturn::k8s
