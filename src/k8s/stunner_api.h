// Typed views of STUNner's own resources (stunner.l7mp.io/v1): GatewayConfig, Dataplane and
// StaticService, with the JSON field names of STUNner's api/v1 types (note `userName`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "k8s/gateway_api.h"
#include "k8s/object.h"

namespace kturn::k8s {

inline constexpr std::string_view kStunnerGroup = "stunner.l7mp.io";

struct GatewayConfig {
  ObjectMeta meta{};
  std::optional<std::string> dataplane{};  // Dataplane name, "default" when omitted
  std::optional<std::string> realm{};
  std::optional<std::string> authType{};
  std::optional<std::string> userName{};
  std::optional<std::string> password{};
  std::optional<std::string> sharedSecret{};
  std::optional<int64_t> authLifetime{};
  std::optional<SecretObjectReference> authRef{};  // overrides the inline auth fields
  StringMap loadBalancerServiceAnnotations{};
  std::optional<std::string> logLevel{};
  int64_t userQuota = 0;
  std::vector<std::string> problems{};
};

// The template of the stunnerd pods. Fields the renderer copies into the pod spec unchanged
// (resources, affinity, tolerations, ...) are kept as JSON.
struct Dataplane {
  ObjectMeta meta{};
  std::string image{};
  std::optional<std::string> imagePullPolicy{};
  std::optional<Json> imagePullSecrets{};
  std::string dataplaneResource = "Deployment";  // or "DaemonSet"
  StringMap labels{};
  StringMap annotations{};
  std::vector<std::string> command{};
  std::vector<std::string> args{};
  std::optional<Json> envFrom{};
  std::optional<Json> env{};
  std::optional<Json> containerSecurityContext{};
  std::optional<int64_t> replicas{};
  std::optional<Json> resources{};
  std::optional<int64_t> terminationGracePeriodSeconds{};
  bool hostNetwork = false;
  std::optional<Json> affinity{};
  std::optional<Json> securityContext{};
  std::optional<Json> tolerations{};
  std::optional<Json> topologySpreadConstraints{};
  bool disableHealthCheck = false;
  bool enableMetricsEndpoint = false;
  std::string offloadEngine{};
  std::vector<std::string> offloadInterfaces{};
  std::vector<std::string> problems{};
};

struct StaticService {
  ObjectMeta meta{};
  std::vector<std::string> prefixes{};
  std::vector<std::string> problems{};
};

GatewayConfig readGatewayConfig(const Object& object);
Dataplane readDataplane(const Object& object);
StaticService readStaticService(const Object& object);

}  // namespace kturn::k8s
