#include "operator/deployment_renderer.h"

#include <algorithm>
#include <cctype>

#include "kturn/host_port.h"
#include "operator/service_renderer.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

using k8s::Json;

Json podLabels(const k8s::Gateway& gw) {
  return {{kAppLabel, kAppValue},
          {kRelatedGatewayName, gw.meta.name},
          {kRelatedGatewayNamespace, gw.meta.ns}};
}

// map merge, later wins, output sorted by key (Kubernetes sorts map keys too).
Json mergedMap(std::initializer_list<k8s::StringMap> maps) {
  k8s::StringMap out;
  for (const k8s::StringMap& m : maps) {
    for (const auto& [k, v] : m) out[k] = v;
  }
  return Json(out);
}

k8s::StringMap asMap(const Json& j) {
  k8s::StringMap out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

Json probe(const char* path, int port) {
  return {{"httpGet", {{"path", path}, {"port", port}, {"scheme", "HTTP"}}},
          {"timeoutSeconds", 1},
          {"periodSeconds", 15},
          {"successThreshold", 1},
          {"failureThreshold", 3}};
}

// Authenticated config discovery for this Gateway's pods: on unless the operator has it off or
// the Gateway opts out.
bool cdsAuthenticated(const k8s::Gateway& gw, const RenderOptions& options) {
  return options.cdsAuth.enabled && !cdsOpen(gw);
}

Json container(const k8s::Gateway& gw, const k8s::Dataplane& dp, const RenderOptions& options,
               const AdminPorts& ports) {
  const bool authenticated = cdsAuthenticated(gw, options);
  const bool tls = authenticated && !options.cdsAuth.caPem.empty();
  Json env = Json::array({
      {{"name", "STUNNER_ADDR"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
      {{"name", "STUNNER_NAME"}, {"value", gw.meta.name}},
      {{"name", "STUNNER_NAMESPACE"}, {"value", gw.meta.ns}},
      {{"name", "STUNNER_NODENAME"},
       {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
      {{"name", "STUNNER_CONFIG_ORIGIN"},
       {"value", configDiscoveryUrl(options.configDiscoveryAddress, tls)}},
  });
  if (authenticated) {
    env.push_back(
        {{"name", "KTURN_CDS_TOKEN_FILE"}, {"value", std::string(kCdsTokenDirectory) + "/token"}});
    if (tls) env.push_back({{"name", "KTURN_CDS_CA"}, {"value", options.cdsAuth.caPem}});
  }
  if (dp.env) {
    for (const Json& e : *dp.env) env.push_back(e);
  }
  Json c = {{"name", kStunnerdContainerName},
            {"image", dp.image.empty() ? options.dataplaneImage : dp.image},
            {"command", dp.command.empty() ? options.dataplaneCommand : dp.command},
            {"args", dp.args.empty() ? options.dataplaneArgs : dp.args}};
  if (dp.envFrom) c["envFrom"] = *dp.envFrom;
  c["env"] = std::move(env);
  c["ports"] = Json::array(
      {{{"name", "metrics-port"}, {"containerPort", ports.metrics}, {"protocol", "TCP"}}});
  c["resources"] = dp.resources
                       ? *dp.resources
                       : Json{{"limits", {{"memory", "20M"}}}, {"requests", {{"cpu", "250m"}}}};
  if (!dp.disableHealthCheck) {
    c["livenessProbe"] = probe("/live", ports.health);
    c["readinessProbe"] = probe("/ready", ports.health);
  }
  c["imagePullPolicy"] = dp.imagePullPolicy.value_or("Always");
  if (dp.containerSecurityContext) c["securityContext"] = *dp.containerSecurityContext;
  if (authenticated) {
    c["volumeMounts"] = Json::array(
        {{{"name", kCdsTokenVolume}, {"mountPath", kCdsTokenDirectory}, {"readOnly", true}}});
  }
  return c;
}

// stunnerd's (and kturnd's) -c k8s: the config discovery server found through the Kubernetes API,
// the one case in which the dataplane talks to the API server. pflag's spellings: "-c k8s",
// "-c=k8s", "-ck8s", "--config k8s", "--config=k8s".
bool findsCdsThroughApi(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool next = i + 1 < argv.size() && argv[i + 1] == "k8s";
    if (((a == "-c" || a == "--config") && next) || a == "-c=k8s" || a == "-ck8s" ||
        a == "--config=k8s") {
      return true;
    }
  }
  return false;
}

Json podSpec(const k8s::Gateway& gw, const k8s::Dataplane& dp, const RenderOptions& options,
             const AdminPorts& ports) {
  Json spec = {{"containers", Json::array({container(gw, dp, options, ports)})}};
  // No API token in a pod that never calls the API server (STUNner's Deployments mount the
  // default ServiceAccount's): a dataplane pod is the one exposed to the internet.
  const std::vector<std::string>& command =
      dp.command.empty() ? options.dataplaneCommand : dp.command;
  const std::vector<std::string>& args = dp.args.empty() ? options.dataplaneArgs : dp.args;
  if (!findsCdsThroughApi(command) && !findsCdsThroughApi(args)) {
    spec["automountServiceAccountToken"] = false;
  }
  spec["terminationGracePeriodSeconds"] =
      dp.terminationGracePeriodSeconds.value_or(kTerminationGraceSeconds);
  if (dp.hostNetwork) {
    spec["hostNetwork"] = true;
    // A pod in the node's network namespace resolves with the node's resolver unless it asks
    // for the cluster's: without this it cannot find the config discovery Service by name
    // (STUNner renders none, so its hostNetwork pods depend on the node resolving *.svc).
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  if (dp.affinity) spec["affinity"] = *dp.affinity;
  if (dp.tolerations) spec["tolerations"] = *dp.tolerations;
  if (dp.securityContext) spec["securityContext"] = *dp.securityContext;
  if (dp.imagePullSecrets && !dp.imagePullSecrets->empty()) {
    spec["imagePullSecrets"] = *dp.imagePullSecrets;
  }
  if (dp.topologySpreadConstraints && !dp.topologySpreadConstraints->empty()) {
    spec["topologySpreadConstraints"] = *dp.topologySpreadConstraints;
  }
  if (cdsAuthenticated(gw, options)) {
    // The kubelet writes and rotates a token bound to the pod, for kturn's audience only: the API
    // server's own token is not mounted for this.
    const Json source = {{"serviceAccountToken",
                          {{"audience", options.cdsAuth.audience},
                           {"expirationSeconds", kCdsTokenExpirationSeconds},
                           {"path", "token"}}}};
    spec["volumes"] = Json::array(
        {{{"name", kCdsTokenVolume}, {"projected", {{"sources", Json::array({source})}}}}});
  }
  return spec;
}

Json selector(const k8s::Gateway& gw) {
  auto in = [](std::string_view key, const std::string& value) {
    return Json{{"key", key}, {"operator", "In"}, {"values", Json::array({value})}};
  };
  return {{"matchExpressions", Json::array({in(kAppLabel, std::string(kAppValue)),
                                            in(kRelatedGatewayName, gw.meta.name),
                                            in(kRelatedGatewayNamespace, gw.meta.ns)})}};
}

}  // namespace

bool cdsOpen(const k8s::Gateway& gateway) {
  auto it = gateway.meta.annotations.find(std::string(kCdsAuthAnnotation));
  return it != gateway.meta.annotations.end() && it->second == kCdsAuthNone;
}

std::string configDiscoveryUrl(const std::string& address, bool tls) {
  std::string host = address;
  std::string port = "13478";
  // A bare IPv6 address ("fd00::1") is all host.
  const bool bareIpv6 =
      !address.starts_with('[') && std::count(address.begin(), address.end(), ':') > 1;
  if (const auto split = splitHostPort(address); split && !bareIpv6) {
    host = std::string(split->host);
    if (split->port && !split->port->empty()) port = std::string(*split->port);
  }
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return (tls ? "https://" : "http://") + host + ":" + port;
}

std::vector<std::string> labelFilterFrom(std::string_view commaSeparated) {
  std::vector<std::string> keys;
  while (!commaSeparated.empty()) {
    const size_t comma = commaSeparated.find(',');
    std::string_view key = commaSeparated.substr(0, comma);
    commaSeparated =
        comma == std::string_view::npos ? std::string_view() : commaSeparated.substr(comma + 1);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front())))
      key.remove_prefix(1);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back())))
      key.remove_suffix(1);
    if (!key.empty()) keys.emplace_back(key);
  }
  return keys;
}

k8s::Dataplane builtinDataplane(const RenderOptions& options) {
  k8s::Dataplane dp;
  dp.meta.name = std::string(kDefaultDataplaneName);
  dp.image = options.dataplaneImage;
  dp.command = options.dataplaneCommand;
  dp.args = options.dataplaneArgs;
  return dp;
}

AdminPorts adminPorts(const k8s::Gateway& gw, const k8s::Dataplane& dp, std::optional<int> health) {
  if (health) return {.health = *health, .metrics = *health + 1};
  if (!dp.hostNetwork) return {};
  uint32_t hash = 2166136261u;  // FNV-1a, 32 bits: stable across versions and platforms
  for (const char c : gw.meta.key().str()) {
    hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  }
  const int port = 18000 + 2 * static_cast<int>(hash % 1000);
  return {.health = port, .metrics = port + 1};
}

k8s::Object renderDeployment(const k8s::Gateway& gw, const k8s::Dataplane& dp,
                             const RenderOptions& options, const AdminPorts& ports) {
  k8s::StringMap gwLabels = gw.meta.labels;
  for (const std::string& key : options.labelFilter) gwLabels.erase(key);
  const k8s::StringMap ownLabels = {{std::string(kOwnedByLabel), std::string(kOwnedByValue)},
                                    {std::string(kRelatedGatewayName), gw.meta.name},
                                    {std::string(kRelatedGatewayNamespace), gw.meta.ns}};
  const k8s::StringMap ownAnnotations = {{std::string(kRelatedGatewayName), gw.meta.key().str()}};
  const bool daemonSet = dp.dataplaneResource == "DaemonSet";

  Json meta = {{"name", gw.meta.name},
               {"namespace", gw.meta.ns},
               {"labels", mergedMap({gwLabels, ownLabels})},
               {"annotations", mergedMap({gw.meta.annotations, ownAnnotations})},
               {"ownerReferences", Json::array({gatewayOwnerReference(gw)})}};
  Json templ = {{"metadata",
                 {{"labels", mergedMap({dp.labels, asMap(podLabels(gw))})},
                  {"annotations", mergedMap({dp.annotations, ownAnnotations})}}},
                {"spec", podSpec(gw, dp, options, ports)}};
  Json spec = {{"selector", selector(gw)}};
  if (!daemonSet && dp.replicas) spec["replicas"] = *dp.replicas;
  spec["template"] = std::move(templ);
  return k8s::Object(Json{{"apiVersion", "apps/v1"},
                          {"kind", daemonSet ? "DaemonSet" : "Deployment"},
                          {"metadata", std::move(meta)},
                          {"spec", std::move(spec)}});
}

}  // namespace kturn::op
