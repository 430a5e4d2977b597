#include "operator/network_policy_renderer.h"

#include "operator/service_renderer.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

using k8s::Json;

constexpr int64_t kMetricsPort = 8080;  // kMetricsEndpoint
constexpr int64_t kHealthPort = 8086;   // kHealthCheckEndpoint

Json range(const char* protocol, int64_t from, int64_t to) {
  return {{"protocol", protocol}, {"port", from}, {"endPort", to}};
}

}  // namespace

std::optional<k8s::Object> renderNetworkPolicy(const k8s::Gateway& gw, const k8s::Dataplane& dp,
                                               const RenderOptions& options) {
  if (!options.dataplaneNetworkPolicy || dp.hostNetwork) return std::nullopt;
  // Every port but the admin ones, which lie in between: [1, 8079], [8081, 8085], [8087, 65535].
  const Json open = Json::array(
      {range("UDP", kMinPort, kMaxPort), range("TCP", kMinPort, kMetricsPort - 1),
       range("TCP", kMetricsPort + 1, kHealthPort - 1), range("TCP", kHealthPort + 1, kMaxPort)});
  const Json admin = Json::array({{{"protocol", "TCP"}, {"port", kHealthPort}},
                                  {{"protocol", "TCP"}, {"port", kMetricsPort}}});
  const Json monitoring = Json::array(
      {{{"namespaceSelector",
         {{"matchLabels", {{"kubernetes.io/metadata.name", options.metricsNamespace}}}}}}});
  return k8s::Object(Json{
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata",
       {{"name", gw.meta.name},
        {"namespace", gw.meta.ns},
        {"labels",
         {{kOwnedByLabel, kOwnedByValue},
          {kRelatedGatewayName, gw.meta.name},
          {kRelatedGatewayNamespace, gw.meta.ns}}},
        {"ownerReferences", Json::array({gatewayOwnerReference(gw)})}}},
      {"spec",
       {{"podSelector",
         {{"matchLabels",
           {{kAppLabel, kAppValue},
            {kRelatedGatewayName, gw.meta.name},
            {kRelatedGatewayNamespace, gw.meta.ns}}}}},
        {"policyTypes", Json::array({"Ingress"})},
        {"ingress", Json::array({{{"ports", open}}, {{"ports", admin}, {"from", monitoring}}})}}}});
}

}  // namespace kturn::op
