#include "operator/public_address.h"

#include <algorithm>
#include <cctype>

#include "operator/listener_protocol.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

int typeRank(const std::string& type) {
  if (type == "LoadBalancer") return 3;
  if (type == "ExternalName") return 2;
  if (type == "NodePort") return 1;
  return 0;
}

bool ownedBy(const k8s::Service& svc, const k8s::Gateway& gw) {
  return std::any_of(svc.ownerReferences.begin(), svc.ownerReferences.end(),
                     [&](const k8s::OwnerReference& o) {
                       return o.kind == "Gateway" && o.name == gw.meta.name &&
                              (o.uid.empty() || gw.meta.uid.empty() || o.uid == gw.meta.uid);
                     });
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<PublicAddress> fromIngress(const k8s::LoadBalancerIngress& in, int port) {
  if (!in.ip.empty()) return PublicAddress{"IPAddress", in.ip, port};
  if (!in.hostname.empty()) return PublicAddress{"Hostname", in.hostname, port};
  return std::nullopt;
}

std::optional<PublicAddress> loadBalancerAddress(const k8s::Service& svc, size_t index) {
  const k8s::ServicePort& sp = svc.ports[index];
  for (const k8s::LoadBalancerIngress& in : svc.ingress) {
    if (in.ports.empty() || index >= in.ports.size()) continue;
    const auto& ps = in.ports[index];
    if (ps.port != sp.port || ps.protocol != sp.protocol) continue;
    if (auto a = fromIngress(in, static_cast<int>(ps.port))) return a;
  }
  // Some LB controllers leave out the per-port status: use the first ingress.
  if (!svc.ingress.empty()) return fromIngress(svc.ingress[0], static_cast<int>(sp.port));
  return std::nullopt;
}

}  // namespace

std::optional<k8s::Service> publicService(const k8s::Gateway& gateway,
                                          const ClusterSnapshot& snapshot,
                                          const std::optional<k8s::Object>& rendered) {
  const k8s::Service* best = nullptr;
  for (const k8s::Service* svc : snapshot.servicesRelatedTo(gateway.meta.key())) {
    if (!ownedBy(*svc, gateway)) continue;
    if (best == nullptr || typeRank(svc->type) > typeRank(best->type)) best = svc;
  }
  if (best != nullptr) return *best;
  if (rendered) return k8s::readService(*rendered);
  return std::nullopt;
}

std::optional<PublicAddress> publicAddress(const k8s::Gateway& gateway,
                                           const k8s::GatewayListener& listener,
                                           const k8s::Service& service,
                                           const ClusterSnapshot& snapshot) {
  auto proto = listenerProtocol(listener.protocol);
  if (!proto) return std::nullopt;
  const std::string_view want = toString(proto->serviceProtocol);
  std::optional<size_t> index;
  for (size_t i = 0; i < service.ports.size(); ++i) {
    if (service.ports[i].port == listener.port &&
        equalsIgnoreCase(service.ports[i].protocol, want)) {
      index = i;
      break;
    }
  }
  if (!index) return std::nullopt;
  const k8s::ServicePort& sp = service.ports[*index];
  if (!gateway.addresses.empty() && !gateway.addresses[0].value.empty()) {
    return PublicAddress{gateway.addresses[0].type.value_or("IPAddress"),
                         gateway.addresses[0].value, static_cast<int>(sp.port)};
  }
  if (service.type == "LoadBalancer") {
    if (auto a = loadBalancerAddress(service, *index)) return a;
  }
  if (sp.nodePort > 0) {
    for (const k8s::Node& node : snapshot.nodes()) {
      if (auto a = node.externalAddress()) {
        return PublicAddress{a->type == "ExternalIP" ? "IPAddress" : "Hostname", a->address,
                             static_cast<int>(sp.nodePort)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace kturn::op
