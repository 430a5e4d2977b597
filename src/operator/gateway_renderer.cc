#include "operator/gateway_renderer.h"

#include <algorithm>
#include <set>

#include "config/validator.h"
#include "kturn/transport_address.h"
#include "operator/auth_renderer.h"
#include "operator/deployment_renderer.h"
#include "operator/global_annotations.h"
#include "operator/listener_protocol.h"
#include "operator/listener_renderer.h"
#include "operator/network_policy_renderer.h"
#include "operator/public_address.h"
#include "operator/route_attachment.h"
#include "operator/service_renderer.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

using k8s::Json;

Condition condition(std::string_view type, ConditionStatus status, std::string_view reason,
                    std::string message, const k8s::Gateway& gw) {
  return {.type = std::string(type),
          .status = status,
          .reason = std::string(reason),
          .message = std::move(message),
          .observedGeneration = gw.meta.generation};
}

Json supportedKinds() {
  return Json::array({{{"group", k8s::kGatewayGroup}, {"kind", "UDPRoute"}},
                      {{"group", k8s::kStunnerGroup}, {"kind", "UDPRoute"}},
                      {{"group", k8s::kStunnerGroup}, {"kind", "TCPRoute"}}});
}

Json listenerStatus(const std::string& name, int attached, const Conditions& conditions,
                    const RenderOptions& options) {
  return {{"name", name},
          {"supportedKinds", supportedKinds()},
          {"attachedRoutes", attached},
          {"conditions", conditions.toJson(options.transitionTime)}};
}

config::Admin renderAdmin(const k8s::Gateway& gw, const ClassContext& ctx,
                          const AdminPorts& ports) {
  config::Admin admin;
  admin.name = gw.meta.key().str();  // managed mode: the config is named after its Gateway
  admin.loglevel = ctx.gatewayConfig->logLevel.value_or("all:INFO");
  // STUNner's endpoints, "http://:8080/metrics" and "http://:8086", at the Gateway's ports.
  if (ctx.dataplane.enableMetricsEndpoint) {
    admin.metrics_endpoint = "http://:" + std::to_string(ports.metrics) + "/metrics";
  }
  admin.healthcheck_endpoint =
      ctx.dataplane.disableHealthCheck ? std::string() : "http://:" + std::to_string(ports.health);
  // Beyond STUNner's open-source operator, which leaves userQuota unused: kturnd enforces it.
  admin.user_quota = static_cast<int>(std::max<int64_t>(0, ctx.gatewayConfig->userQuota));
  admin.offload_engine = ctx.dataplane.offloadEngine;
  admin.offload_interfaces = ctx.dataplane.offloadInterfaces;
  return admin;
}

// Routes attached to a listener, as cluster names; also counts them (attachedRoutes).
std::vector<std::string> attachedRoutes(const k8s::Gateway& gw, const k8s::GatewayListener& l,
                                        const ClusterSnapshot& snapshot) {
  std::vector<std::string> names;
  for (const size_t i : snapshot.routesNaming(gw.meta.key())) {
    const k8s::Route& route = snapshot.route(i);
    if (snapshot.isMasked(route) || !route.problems.empty()) continue;
    for (const k8s::ParentReference& p : route.parentRefs) {
      if (rejectReason(route, p, gw, l, snapshot).empty()) {
        names.push_back(route.meta.key().str());
        break;
      }
    }
  }
  return names;
}

// Gateway-level read problems: everything but spec.listeners[i]... (those reject one listener).
std::vector<std::string> gatewayProblems(const k8s::Gateway& gw) {
  std::vector<std::string> out;
  for (const std::string& p : gw.problems) {
    if (!p.starts_with("spec.listeners[")) out.push_back(p);
  }
  return out;
}

std::vector<config::Cluster> gatewayClusters(const k8s::Gateway& gw,
                                             const ClusterSnapshot& snapshot,
                                             const ClusterOf& clusterOf) {
  std::vector<config::Cluster> out;
  for (const size_t i : snapshot.routesNaming(gw.meta.key())) {
    const k8s::Route& route = snapshot.route(i);
    if (snapshot.isMasked(route) || !route.problems.empty()) continue;
    const ClusterRender& cluster = clusterOf(i);
    if (!cluster.cluster) continue;
    const bool accepted =
        std::any_of(route.parentRefs.begin(), route.parentRefs.end(), [&](const auto& p) {
          const k8s::Gateway* parent = parentGateway(route, p, snapshot);
          return parent == &gw && parentAccepts(route, p, gw, snapshot);
        });
    if (!accepted) continue;
    const bool taken = std::any_of(out.begin(), out.end(), [&](const config::Cluster& c) {
      return c.name == cluster.cluster->name;
    });
    // A TCPRoute named like a UDPRoute: the UDPRoute (rendered first) keeps the cluster name.
    if (!taken) out.push_back(*cluster.cluster);
  }
  return out;
}

// Why a Gateway's spec refuses it before anything is rendered, if it does.
struct Refusal {
  std::string_view reason;
  std::string message;
};
std::optional<Refusal> specRefusal(const k8s::Gateway& gw) {
  if (auto problems = gatewayProblems(gw); !problems.empty()) {
    const std::string_view why = problems[0].starts_with("spec.addresses")
                                     ? std::string_view("UnsupportedAddress")
                                     : reason::kInvalidParameters;
    return Refusal{why, "Gateway " + gw.meta.key().str() + ": " + problems[0]};
  }
  for (size_t i = 0; i < gw.addresses.size(); ++i) {
    const k8s::GatewayAddress& a = gw.addresses[i];
    // STUNner passes the value on as loadBalancerIP and the API server rejects the Service.
    if (a.type.value_or("IPAddress") == "IPAddress" && !IpAddress::parse(a.value)) {
      return Refusal{"UnsupportedAddress", "spec.addresses[" + std::to_string(i) + "].value \"" +
                                               a.value + "\": not an IP address"};
    }
  }
  return std::nullopt;
}

// What the Gateway decides for listener `l`, which was rendered: its Service's target port, its
// public address `addr` (if one was found), its routes and the sibling regions' alternate
// servers; and its Programmed condition.
void programListener(ListenerRender& l, const k8s::Gateway& gw, const ServiceRender& svc,
                     const std::optional<PublicAddress>& addr, const GlobalAnnotations& annotations,
                     const std::vector<std::string>& routes) {
  if (auto it = svc.targetPorts.find(l.spec->name); it != svc.targetPorts.end()) {
    l.config->port = it->second;
  }
  if (addr) {
    l.config->public_address = addr->address;
    l.config->public_port = addr->port;
  }
  l.config->routes = routes;
  // A sibling Gateway in another region has the same listeners: its public address at this
  // listener's port.
  l.config->alternate_servers = annotations.alternateServers(static_cast<int>(l.spec->port));
  if (!l.config->alternate_servers.empty())
    l.config->alternate_domain = annotations.alternate_domain;
  if (svc.unexposed.contains(l.spec->name)) {
    l.conditions.set(condition(
        cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
        "not exposed: the Service carries " + svc.serviceProtocol + " only, set annotation " +
            std::string(kMixedProtocolAnnotation) + ": \"true\" to expose " +
            std::string(toString(listenerProtocol(l.spec->protocol)->serviceProtocol)) +
            " listeners too",
        gw));
  } else {
    l.conditions.set(condition(cond::kProgrammed, ConditionStatus::kTrue, reason::kProgrammed,
                               "listener rendered into the dataplane config", gw));
  }
}

// Listener `l` was not rendered: Programmed false, with the reason its other conditions give.
void markUnrendered(ListenerRender& l, const k8s::Gateway& gw) {
  l.conditions.set(
      condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
                "listener not rendered: " + l.conditions.find(cond::kAccepted)->message, gw));
  if (const Condition* refs = l.conditions.find(cond::kResolvedRefs);
      refs && refs->status == ConditionStatus::kFalse) {
    l.conditions.set(condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
                               "listener not rendered: " + refs->message, gw));
  }
}

// The listeners that are not valid (not accepted, or a reference unresolved) by name, and those
// not programmed as "name: why".
struct ListenerSummary {
  std::vector<std::string> invalid;
  std::vector<std::string> unprogrammed;
};
ListenerSummary summarize(const std::vector<ListenerRender>& listeners) {
  ListenerSummary out;
  auto isFalse = [](const Conditions& c, std::string_view type) {
    const Condition* found = c.find(type);
    return found != nullptr && found->status == ConditionStatus::kFalse;
  };
  for (const ListenerRender& l : listeners) {
    if (isFalse(l.conditions, cond::kAccepted) || isFalse(l.conditions, cond::kResolvedRefs)) {
      out.invalid.push_back(l.spec->name);
    }
    if (isFalse(l.conditions, cond::kProgrammed)) {
      out.unprogrammed.push_back(l.spec->name + ": " +
                                 l.conditions.find(cond::kProgrammed)->message);
    }
  }
  return out;
}

// The parts joined, up to about 4 KiB (a condition message may hold 32 KiB; a Gateway has up to
// 64 listeners, each with its own message in its own status).
std::string join(const std::vector<std::string>& parts, std::string_view separator = ", ") {
  constexpr size_t kMaxMessage = 4096;
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (out.size() + parts[i].size() > kMaxMessage) {
      return out + std::string(separator) + "and " + std::to_string(parts.size() - i) + " more";
    }
    out += (i == 0 ? "" : std::string(separator)) + parts[i];
  }
  return out;
}

}  // namespace

GatewayRender rejectGateway(const k8s::Gateway& gw, std::string_view reason,
                            const std::string& message, const RenderOptions& options) {
  GatewayRender out;
  out.output.gateway = gw.meta.key();
  Conditions conditions;
  conditions.set(condition(cond::kAccepted, ConditionStatus::kFalse, reason, message, gw));
  conditions.set(condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
                           "no dataplane configuration rendered: " + message, gw));
  Json listeners = Json::array();
  for (const k8s::GatewayListener& l : gw.listeners) {
    Conditions lc;
    lc.set(condition(cond::kAccepted, ConditionStatus::kUnknown, reason::kPending, "pending", gw));
    lc.set(condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kPending,
                     "Gateway not accepted", gw));
    listeners.push_back(listenerStatus(l.name, 0, lc, options));
  }
  out.status = {{"addresses", Json::array()},
                {"conditions", conditions.toJson(options.transitionTime)},
                {"listeners", std::move(listeners)}};
  return out;
}

GatewayRender renderGateway(const k8s::Gateway& gw, const ClassContext& ctx,
                            const ClusterSnapshot& snapshot, const ClusterOf& clusterOf,
                            const RenderOptions& options) {
  if (auto refusal = specRefusal(gw)) {
    return rejectGateway(gw, refusal->reason, refusal->message, options);
  }
  auto auth = renderAuth(*ctx.gatewayConfig, snapshot);
  if (!auth) return rejectGateway(gw, reason::kInvalidParameters, auth.error().message, options);
  auto annotations = readGlobalAnnotations(gw.meta);
  if (!annotations) {
    return rejectGateway(gw, reason::kInvalidParameters,
                         "Gateway " + gw.meta.key().str() + ": " + annotations.error().message,
                         options);
  }

  GatewayRender out;
  out.output.gateway = gw.meta.key();
  std::vector<ListenerRender> listeners = renderListeners(gw, snapshot, options);
  std::set<std::string> valid;
  for (const ListenerRender& l : listeners) {
    if (l.config) valid.insert(l.spec->name);
  }
  ServiceRender svc = renderService(gw, *ctx.gatewayConfig, valid);
  std::optional<k8s::Service> pub = publicService(gw, snapshot, svc.service);

  const AdminPorts ports = adminPorts(gw, ctx.dataplane, annotations->health_check_port);
  config::StunnerConfig conf{.version = "v1", .admin = renderAdmin(gw, ctx, ports), .auth = *auth};
  conf.admin.capacity = annotations->capacity;
  conf.admin.region = annotations->region;
  Json listenerStatuses = Json::array();
  std::optional<PublicAddress> lastAddress;
  bool allAddressed = true;
  for (ListenerRender& l : listeners) {
    const std::vector<std::string> routes = attachedRoutes(gw, *l.spec, snapshot);
    if (l.config) {
      const std::optional<PublicAddress> addr =
          pub ? publicAddress(gw, *l.spec, *pub, snapshot) : std::nullopt;
      if (addr) lastAddress = addr;
      allAddressed = allAddressed && addr.has_value();
      programListener(l, gw, svc, addr, *annotations, routes);
      conf.listeners.push_back(*l.config);
    } else {
      markUnrendered(l, gw);
    }
    listenerStatuses.push_back(
        listenerStatus(l.spec->name, static_cast<int>(routes.size()), l.conditions, options));
  }
  conf.clusters = gatewayClusters(gw, snapshot, clusterOf);
  const ListenerSummary summary = summarize(listeners);

  Conditions conditions;
  const std::string accepted = "gateway accepted by controller " + options.controllerName;
  conditions.set(
      summary.invalid.empty()
          ? condition(cond::kAccepted, ConditionStatus::kTrue, reason::kAccepted, accepted, gw)
          : condition(cond::kAccepted, ConditionStatus::kTrue, reason::kListenersNotValid,
                      accepted + "; listeners not valid: " + join(summary.invalid), gw));
  // Validate as stunnerd will see it, after it substitutes $STUNNER_ADDR with the pod IP; keep
  // the variable in the output, which validate() leaves in place otherwise (defaults filled,
  // routes and endpoints sorted, listeners in Gateway order).
  for (config::Listener& l : conf.listeners) l.address = "0.0.0.0";
  auto ok = config::validate(conf);
  for (config::Listener& l : conf.listeners) l.address = std::string(kListenerAddress);
  if (!ok) {
    // Not expected: every part was checked on the way. Keep the Gateway's old config running.
    conditions.set(condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
                             "rendered dataplane config is invalid: " + ok.error().message, gw));
  } else {
    out.output.config = std::move(conf);
    if (ctx.gatewayConfig != nullptr && ctx.gatewayConfig->authLifetime &&
        *ctx.gatewayConfig->authLifetime > 0) {
      out.output.credential_lifetime = std::chrono::seconds(*ctx.gatewayConfig->authLifetime);
    }
    // Which listeners do not serve, each with its own Programmed message.
    const std::string unprogrammed =
        summary.unprogrammed.empty()
            ? std::string()
            : "; listeners not programmed: " + join(summary.unprogrammed, "; ");
    if (!gw.listeners.empty() && summary.unprogrammed.size() == gw.listeners.size()) {
      conditions.set(condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kInvalid,
                               "no listener programmed" + unprogrammed, gw));
    } else if (allAddressed) {
      conditions.set(condition(cond::kProgrammed, ConditionStatus::kTrue, reason::kProgrammed,
                               "dataplane configuration successfully rendered" + unprogrammed, gw));
    } else {
      conditions.set(
          condition(cond::kProgrammed, ConditionStatus::kFalse, reason::kAddressNotAssigned,
                    "no public address found for at least one listener" + unprogrammed, gw));
    }
  }
  out.output.service = std::move(svc.service);
  out.output.cds_open = cdsOpen(gw);
  auto disabled = gw.meta.annotations.find(std::string(kDisableManagedDataplaneAnnotation));
  if (disabled == gw.meta.annotations.end() || disabled->second != "true") {
    out.output.deployment = renderDeployment(gw, ctx.dataplane, options, ports);
    out.output.networkPolicy = renderNetworkPolicy(gw, ctx.dataplane, options, ports);
  }
  Json addresses = Json::array();
  if (lastAddress)
    addresses.push_back({{"type", lastAddress->type}, {"value", lastAddress->address}});
  out.status = {{"addresses", std::move(addresses)},
                {"conditions", conditions.toJson(options.transitionTime)},
                {"listeners", std::move(listenerStatuses)}};
  return out;
}

}  // namespace kturn::op
