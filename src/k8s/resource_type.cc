#include "k8s/resource_type.h"

#include <array>

namespace kturn::k8s {

std::string ResourceType::apiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::collectionPath(std::string_view ns) const {
  std::string out = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) out += "/namespaces/" + std::string(ns);
  return out + "/" + plural;
}

std::string ResourceType::objectPath(std::string_view ns, std::string_view name,
                                     std::string_view subresource) const {
  std::string out = collectionPath(ns) + "/" + std::string(name);
  if (!subresource.empty()) out += "/" + std::string(subresource);
  return out;
}

namespace resources {
namespace {
constexpr const char* kGatewayGroup = "gateway.networking.k8s.io";
constexpr const char* kStunnerGroup = "stunner.l7mp.io";
}  // namespace

ResourceType gatewayClass() {
  return {kGatewayGroup, "v1", "GatewayClass", "gatewayclasses", false};
}
ResourceType gateway() { return {kGatewayGroup, "v1", "Gateway", "gateways", true}; }
ResourceType gatewayUdpRoute() {
  return {kGatewayGroup, "v1alpha2", "UDPRoute", "udproutes", true};
}
ResourceType referenceGrant() {
  return {kGatewayGroup, "v1beta1", "ReferenceGrant", "referencegrants", true};
}
ResourceType stunnerUdpRoute() { return {kStunnerGroup, "v1", "UDPRoute", "udproutes", true}; }
ResourceType stunnerTcpRoute() { return {kStunnerGroup, "v1", "TCPRoute", "tcproutes", true}; }
ResourceType gatewayConfig() {
  return {kStunnerGroup, "v1", "GatewayConfig", "gatewayconfigs", true};
}
ResourceType dataplane() { return {kStunnerGroup, "v1", "Dataplane", "dataplanes", false}; }
ResourceType staticService() {
  return {kStunnerGroup, "v1", "StaticService", "staticservices", true};
}
ResourceType secret() { return {"", "v1", "Secret", "secrets", true}; }
ResourceType service() { return {"", "v1", "Service", "services", true}; }
ResourceType endpointSlice() {
  return {"discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true};
}
ResourceType node() { return {"", "v1", "Node", "nodes", false}; }
ResourceType namespace_() { return {"", "v1", "Namespace", "namespaces", false}; }
ResourceType deployment() { return {"apps", "v1", "Deployment", "deployments", true}; }
ResourceType daemonSet() { return {"apps", "v1", "DaemonSet", "daemonsets", true}; }
ResourceType lease() { return {"coordination.k8s.io", "v1", "Lease", "leases", true}; }
ResourceType pod() { return {"", "v1", "Pod", "pods", true}; }
ResourceType replicaSet() { return {"apps", "v1", "ReplicaSet", "replicasets", true}; }
ResourceType networkPolicy() {
  return {"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true};
}
ResourceType tokenReview() {
  return {"authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false};
}
ResourceType subjectAccessReview() {
  return {"authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false};
}
}  // namespace resources

const ResourceType* findResourceType(std::string_view apiVersion, std::string_view kind) {
  static const std::array<ResourceType, 18> all = {
      resources::gatewayClass(),   resources::gateway(),         resources::gatewayUdpRoute(),
      resources::referenceGrant(), resources::stunnerUdpRoute(), resources::stunnerTcpRoute(),
      resources::gatewayConfig(),  resources::dataplane(),       resources::staticService(),
      resources::secret(),         resources::service(),         resources::endpointSlice(),
      resources::node(),           resources::namespace_(),      resources::deployment(),
      resources::daemonSet(),      resources::lease(),           resources::networkPolicy(),
  };
  const size_t slash = apiVersion.find('/');
  const std::string_view group = slash == std::string_view::npos ? "" : apiVersion.substr(0, slash);
  for (const ResourceType& r : all) {
    // Any served version of the group: Gateway API objects written as v1beta1 are the same.
    if (r.kind == kind && r.group == group) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace kturn::k8s
