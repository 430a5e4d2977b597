// Typed views of the core and discovery objects the renderer reads: Service (backends, and the
// Gateway's own LoadBalancer for public address discovery), EndpointSlice, Secret and Node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "k8s/object.h"

namespace kturn::k8s {

struct ServicePort {
  std::string name{};
  std::string protocol = "TCP";  // the Kubernetes default
  int64_t port = 0;
  int64_t nodePort = 0;
};

struct LoadBalancerIngress {
  std::string ip{};
  std::string hostname{};
  struct PortStatus {
    int64_t port = 0;
    std::string protocol{};
  };
  std::vector<PortStatus> ports{};
};

struct OwnerReference {
  std::string apiVersion{};
  std::string kind{};
  std::string name{};
  std::string uid{};
};

struct Service {
  ObjectMeta meta{};
  std::string type = "ClusterIP";
  std::string clusterIP{};
  std::vector<std::string> clusterIPs{};
  std::vector<ServicePort> ports{};
  std::vector<LoadBalancerIngress> ingress{};  // status.loadBalancer.ingress
  std::vector<OwnerReference> ownerReferences{};
  std::vector<std::string> problems{};
};

struct EndpointSliceEndpoint {
  std::vector<std::string> addresses{};
  std::optional<bool> ready{};
  std::optional<bool> serving{};
};

struct EndpointSlice {
  ObjectMeta meta{};
  std::string serviceName{};  // label kubernetes.io/service-name
  std::vector<EndpointSliceEndpoint> endpoints{};
  std::vector<std::string> problems{};
};

struct Secret {
  ObjectMeta meta{};
  std::string type = "Opaque";
  // `data` base64-decoded, then `stringData` on top, as the API server merges them on write.
  std::map<std::string, std::string> data{};
  std::vector<std::string> problems{};

  std::optional<std::string> get(const std::string& key) const;
};

struct NodeAddress {
  std::string type{};  // ExternalIP, ExternalDNS, InternalIP, Hostname
  std::string address{};
};

struct Node {
  ObjectMeta meta{};
  std::vector<NodeAddress> addresses{};
  std::vector<std::string> problems{};

  // The first ExternalIP, else the first ExternalDNS (STUNner's store.GetExternalAddress).
  std::optional<NodeAddress> externalAddress() const;
};

Service readService(const Object& object);
EndpointSlice readEndpointSlice(const Object& object);
Secret readSecret(const Object& object);
Node readNode(const Object& object);

inline constexpr std::string_view kServiceNameLabel = "kubernetes.io/service-name";

}  // namespace kturn::k8s
