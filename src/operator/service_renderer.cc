#include "operator/service_renderer.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "operator/listener_protocol.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<std::string> lookup(const k8s::StringMap& m, std::string_view key) {
  auto it = m.find(std::string(key));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

// The nodeport/targetport annotations: a JSON object of listener name → port; STUNner also takes
// the object without its braces.
std::map<std::string, int> portAnnotation(const k8s::StringMap& annotations, std::string_view key) {
  std::map<std::string, int> out;
  auto text = lookup(annotations, key);
  if (!text) return out;
  for (const std::string& candidate : {*text, "{" + *text + "}"}) {
    k8s::Json j = k8s::Json::parse(candidate, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    for (const auto& [k, v] : j.items()) {
      if (v.is_number_integer()) out[k] = v.get<int>();
    }
    return out;
  }
  return out;
}

// The cloud health-check port: STUNner opens it on LoadBalancer Services when annotations
// service.beta.kubernetes.io/*health*port and *health*protocol (TCP or HTTP) are both set.
std::optional<int> healthCheckPort(const k8s::StringMap& annotations) {
  static const std::regex kPort(R"(^service\.beta\.kubernetes\.io\/.*health.*port$)");
  static const std::regex kProtocol(R"(^service\.beta\.kubernetes\.io\/.*health.*protocol$)");
  std::optional<int> port;
  bool protocolOk = false;
  for (const auto& [k, v] : annotations) {
    if (std::regex_match(k, kPort)) {
      char* end = nullptr;
      const long p = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || p <= 0 || p > kMaxPort) return std::nullopt;
      port = static_cast<int>(p);
    }
    if (std::regex_match(k, kProtocol)) {
      const std::string p = lower(v);
      if (p != "tcp" && p != "http") return std::nullopt;
      protocolOk = true;
    }
  }
  if (!port || !protocolOk) return std::nullopt;
  return port;
}

std::string serviceType(const k8s::StringMap& annotations) {
  auto t = lookup(annotations, kServiceTypeAnnotation);
  if (t &&
      (*t == "ClusterIP" || *t == "NodePort" || *t == "ExternalName" || *t == "LoadBalancer")) {
    return *t;
  }
  return "LoadBalancer";  // STUNner's default, also for values it does not know
}

}  // namespace

k8s::StringMap effectiveAnnotations(const k8s::Gateway& gateway,
                                    const k8s::GatewayConfig& gatewayConfig) {
  k8s::StringMap out = gatewayConfig.loadBalancerServiceAnnotations;
  for (const auto& [k, v] : gateway.meta.annotations) out[k] = v;
  return out;
}

k8s::Json gatewayOwnerReference(const k8s::Gateway& gateway) {
  k8s::Json ref = {{"apiVersion", "gateway.networking.k8s.io/v1"},
                   {"kind", "Gateway"},
                   {"name", gateway.meta.name}};
  // The API server requires the uid; a Gateway read from a file has none, and the applier,
  // which knows the live object, fills it in.
  if (!gateway.meta.uid.empty()) ref["uid"] = gateway.meta.uid;
  return ref;
}

ServiceRender renderService(const k8s::Gateway& gateway, const k8s::GatewayConfig& gatewayConfig,
                            const std::set<std::string>& validListeners) {
  ServiceRender out;
  k8s::StringMap annotations = effectiveAnnotations(gateway, gatewayConfig);
  annotations[std::string(kRelatedGatewayName)] = gateway.meta.key().str();
  const std::string type = serviceType(annotations);
  const bool mixed = lower(lookup(annotations, kMixedProtocolAnnotation).value_or("")) == "true";
  const auto nodePorts = portAnnotation(annotations, kNodePortAnnotation);
  out.targetPorts = portAnnotation(annotations, kTargetPortAnnotation);

  k8s::Json ports = k8s::Json::array();
  for (const k8s::GatewayListener& l : gateway.listeners) {
    if (!validListeners.contains(l.name)) continue;
    auto proto = listenerProtocol(l.protocol);
    if (!proto) continue;
    const std::string p(toString(proto->serviceProtocol));
    if (out.serviceProtocol.empty()) out.serviceProtocol = p;
    if (!mixed && p != out.serviceProtocol) {
      out.unexposed.insert(l.name);
      continue;
    }
    k8s::Json port = {{"name", l.name}, {"protocol", p}, {"port", l.port}};
    if (auto it = nodePorts.find(l.name); it != nodePorts.end()) port["nodePort"] = it->second;
    if (auto it = out.targetPorts.find(l.name); it != out.targetPorts.end()) {
      port["targetPort"] = it->second;
    }
    ports.push_back(std::move(port));
  }
  if (ports.empty()) return out;  // STUNner refuses to create a Service without ports

  const bool noHealthPort =
      lower(lookup(annotations, kDisableHealthCheckExposeAnnotation).value_or("")) == "true";
  if (type == "LoadBalancer" && !noHealthPort) {
    if (auto hc = healthCheckPort(annotations)) {
      ports.push_back({{"name", kHealthCheckPortName}, {"protocol", "TCP"}, {"port", *hc}});
    }
  }

  k8s::Json labels = {{kOwnedByLabel, kOwnedByValue},
                      {kRelatedGatewayNamespace, gateway.meta.ns},
                      {kRelatedGatewayName, gateway.meta.name}};
  k8s::Json meta = {{"name", gateway.meta.name},
                    {"namespace", gateway.meta.ns},
                    {"labels", labels},
                    {"annotations", annotations},
                    {"ownerReferences", k8s::Json::array({gatewayOwnerReference(gateway)})}};
  k8s::Json spec = {{"type", type},
                    {"selector",
                     {{kAppLabel, kAppValue},
                      {kRelatedGatewayNamespace, gateway.meta.ns},
                      {kRelatedGatewayName, gateway.meta.name}}},
                    {"ports", ports}};
  // Local keeps the client's source address, which STUN binding responses report; Kubernetes
  // allows it only on NodePort and LoadBalancer Services (l7mp/stunner#150).
  const bool local =
      lower(lookup(annotations, kExternalTrafficPolicyAnnotation).value_or("")) == "local";
  if (local && (type == "NodePort" || type == "LoadBalancer")) {
    spec["externalTrafficPolicy"] = "Local";
  }
  // ClientIP pins a client's TURN session to one stunnerd pod; some LB controllers reject it on
  // UDP Services (l7mp/stunner#155), hence the opt-out.
  const bool noAffinity =
      lower(lookup(annotations, kDisableSessionAffinityAnnotation).value_or("")) == "true";
  spec["sessionAffinity"] = noAffinity ? "None" : "ClientIP";
  if (!gateway.addresses.empty() &&
      gateway.addresses[0].type.value_or("IPAddress") == "IPAddress" &&
      !gateway.addresses[0].value.empty()) {
    spec["loadBalancerIP"] = gateway.addresses[0].value;
  }
  out.service = k8s::Object(
      k8s::Json{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", meta}, {"spec", spec}});
  return out;
}

}  // namespace kturn::op
