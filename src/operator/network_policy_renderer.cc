#include "operator/network_policy_renderer.h"

#include <algorithm>

#include "operator/service_renderer.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

using k8s::Json;

Json range(const char* protocol, int64_t from, int64_t to) {
  return {{"protocol", protocol}, {"port", from}, {"endPort", to}};
}

}  // namespace

std::optional<k8s::Object> renderNetworkPolicy(const k8s::Gateway& gw, const k8s::Dataplane& dp,
                                               const RenderOptions& options,
                                               const AdminPorts& ports) {
  if (!options.dataplaneNetworkPolicy || dp.hostNetwork) return std::nullopt;
  // Every port but the admin ones, which lie in between: by default [1, 8079], [8081, 8085],
  // [8087, 65535]; no range where they are neighbours.
  const int64_t low = std::min(ports.health, ports.metrics);
  const int64_t high = std::max(ports.health, ports.metrics);
  Json open = Json::array({range("UDP", kMinPort, kMaxPort), range("TCP", kMinPort, low - 1)});
  if (high - low > 1) open.push_back(range("TCP", low + 1, high - 1));
  open.push_back(range("TCP", high + 1, kMaxPort));
  const Json admin = Json::array({{{"protocol", "TCP"}, {"port", ports.health}},
                                  {{"protocol", "TCP"}, {"port", ports.metrics}}});
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
