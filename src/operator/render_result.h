// What one render produces: the desired state of every Gateway's dataplane and the status of
// every object the controller is responsible for.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "config/stunner_config.h"
#include "k8s/object.h"

namespace kturn::op {

struct GatewayOutput {
  k8s::ObjectKey gateway;
  // The validated dataplane config served to this Gateway's stunnerd pods. nullopt when the
  // Gateway is not accepted: its config, Deployment and Service are to be removed.
  std::optional<config::StunnerConfig> config{};
  std::optional<k8s::Object> deployment;  // a Deployment, or a DaemonSet if the Dataplane says so
  std::optional<k8s::Object> service;     // nullopt: no listener can be exposed
  // RenderOptions::dataplaneNetworkPolicy: who may reach the pods (network_policy_renderer.h).
  std::optional<k8s::Object> networkPolicy{};
  // How long an ephemeral credential minted for this Gateway may stay valid (the GatewayConfig's
  // authLifetime, default one day, as STUNner's auth service mints): when the shared secret
  // changes, the replaced one keeps validating this long (ConfigPublisher).
  std::chrono::seconds credential_lifetime{kDefaultCredentialLifetime};
  // Served over CDS without a token (the Gateway's kturn.io/config-discovery-auth: none).
  bool cds_open = false;

  static constexpr std::chrono::seconds kDefaultCredentialLifetime{86400};
};

// A status subresource update: the object's identity and its whole new `status`.
struct StatusUpdate {
  std::string apiVersion{};
  std::string kind{};
  k8s::ObjectKey key;
  k8s::Json status;
};

struct RenderResult {
  std::vector<GatewayOutput> gateways{};  // sorted by Gateway key
  // GatewayClasses, then Gateways, then routes; each sorted by key.
  std::vector<StatusUpdate> statuses{};
  // Problems that are not any one object's status: e.g. two Gateways claiming one Service name
  // cannot happen, but a rendered config failing validation would be reported here.
  std::vector<std::string> problems{};
};

}  // namespace kturn::op
