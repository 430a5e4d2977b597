#include "operator/cluster_renderer.h"

#include <algorithm>

#include "config/endpoint.h"
#include "operator/condition.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

struct Backend {
  std::vector<std::string> endpoints{};
  std::string type = "STATIC";  // or STRICT_DNS: the cluster type its endpoints need
  std::string reason{};         // empty: resolved
  std::string message{};
};

std::string refName(const k8s::BackendRef& ref, const std::string& ns) {
  return ns + "/" + ref.name;
}

std::string routeKindName(const k8s::Route& route) {
  return route.isTcp() ? "TCPRoute" : "UDPRoute";
}

std::string routeGroup(const k8s::Route& route) {
  return std::string(route.routeKind == k8s::RouteKind::kGatewayUdp ? k8s::kGatewayGroup
                                                                    : k8s::kStunnerGroup);
}

// A ReferenceGrant in the backend's namespace lets routes of this kind in the route's
// namespace refer to the backend (Gateway API ReferenceGrant semantics).
bool referenceGranted(const k8s::Route& route, const std::string& group, const std::string& kind,
                      const k8s::ObjectKey& target, const ClusterSnapshot& snapshot) {
  for (const k8s::ReferenceGrant* rg : snapshot.referenceGrantsIn(target.ns)) {
    const bool fromOk =
        std::any_of(rg->from.begin(), rg->from.end(), [&](const k8s::ReferenceGrantFrom& f) {
          return f.group == routeGroup(route) && f.kind == routeKindName(route) &&
                 f.ns == route.meta.ns;
        });
    const bool toOk =
        std::any_of(rg->to.begin(), rg->to.end(), [&](const k8s::ReferenceGrantTo& t) {
          return t.group == group && t.kind == kind && (!t.name || *t.name == target.name);
        });
    if (fromOk && toOk) return true;
  }
  return false;
}

Backend serviceBackend(const k8s::ObjectKey& key, const ClusterSnapshot& snapshot,
                       const RenderOptions& options) {
  Backend b;
  for (const k8s::EndpointSlice* es : snapshot.endpointSlicesOf(key)) {
    for (const k8s::EndpointSliceEndpoint& ep : es->endpoints) {
      for (const std::string& addr : ep.addresses) b.endpoints.push_back(addr);
    }
  }
  const bool noEndpoints = b.endpoints.empty();
  const k8s::Service* svc = snapshot.findService(key);
  if (options.relayToClusterIP && svc != nullptr && !svc->clusterIP.empty() &&
      svc->clusterIP != "None") {
    b.endpoints.push_back(svc->clusterIP);
  }
  // STUNner reports each of these as BackendNotFound; a headless Service (ClusterIP None) it
  // also flags, although its own message calls that fine. kturn does not flag it.
  if (svc == nullptr && noEndpoints) {
    b.reason = reason::kBackendNotFound;
    b.message = "Service " + key.str() + " not found";
  } else if (svc == nullptr) {
    b.reason = reason::kBackendNotFound;
    b.message = "Service " + key.str() + " not found (its EndpointSlices are used)";
  } else if (noEndpoints) {
    b.reason = reason::kBackendNotFound;
    b.message = "Service " + key.str() + " has no endpoints" +
                (b.endpoints.empty() ? "" : " (its ClusterIP is used)");
  }
  return b;
}

Backend staticServiceBackend(const k8s::ObjectKey& key, const ClusterSnapshot& snapshot) {
  Backend b;
  const k8s::StaticService* ss = snapshot.findStaticService(key);
  if (ss == nullptr) {
    b.reason = reason::kBackendNotFound;
    b.message = "StaticService " + key.str() + " not found";
    return b;
  }
  b.endpoints = ss->prefixes;
  return b;
}

// STUNner's injectPortRange: port alone means that one port, endPort widens it; out-of-range
// values are ignored, and the full range 1-65535 is not written.
void injectPortRange(const k8s::BackendRef& ref, std::vector<std::string>& endpoints) {
  int64_t port = kMinPort;
  int64_t endPort = kMaxPort;
  if (ref.port && *ref.port > 0 && *ref.port <= kMaxPort) port = endPort = *ref.port;
  if (ref.endPort && *ref.endPort > 0 && *ref.endPort <= kMaxPort && *ref.endPort >= port) {
    endPort = *ref.endPort;
  }
  if (port == kMinPort && endPort == kMaxPort) return;
  for (std::string& ep : endpoints) {
    ep += ":<" + std::to_string(port) + "-" + std::to_string(endPort) + ">";
  }
}

Backend resolveBackend(const k8s::Route& route, const k8s::BackendRef& ref,
                       const ClusterSnapshot& snapshot, const RenderOptions& options) {
  const std::string ns = ref.ns.value_or(route.meta.ns);
  const std::string group = ref.group.value_or("");
  const std::string kind = ref.kind.value_or("Service");
  if (!group.empty() && group != k8s::kStunnerGroup) {
    return {.reason = std::string(reason::kInvalidKind),
            .message = "backend " + refName(ref, ns) + ": group " + group + " not supported"};
  }
  if (kind != "Service" && kind != "StaticService") {
    return {.reason = std::string(reason::kInvalidKind),
            .message = "backend " + refName(ref, ns) + ": kind " + kind +
                       " not supported (Service or StaticService)"};
  }
  const k8s::ObjectKey key{ns, ref.name};
  if (options.enforceReferenceGrants && ns != route.meta.ns) {
    const std::string targetGroup = kind == "Service" ? "" : std::string(k8s::kStunnerGroup);
    if (!referenceGranted(route, targetGroup, kind, key, snapshot)) {
      return {.reason = std::string(reason::kRefNotPermitted),
              .message = "backend " + kind + " " + key.str() + ": no ReferenceGrant in namespace " +
                         ns + " allows " + routeKindName(route) + "s from namespace " +
                         route.meta.ns};
    }
  }
  Backend b;
  if (kind == "Service" && !options.endpointDiscovery) {
    // As STUNner without endpoint discovery: the Service's name, whether or not it exists.
    b.endpoints = {ref.name + "." + ns + ".svc.cluster.local"};
    b.type = "STRICT_DNS";
  } else {
    b = kind == "Service" ? serviceBackend(key, snapshot, options)
                          : staticServiceBackend(key, snapshot);
  }
  // As STUNner: only STATIC clusters carry port ranges (stunnerd takes a bare name in a
  // STRICT_DNS cluster), so a DNS backend admits every port of its addresses.
  if (b.type == "STATIC") injectPortRange(ref, b.endpoints);
  return b;
}

}  // namespace

ClusterRender renderCluster(const k8s::Route& route, const ClusterSnapshot& snapshot,
                            const RenderOptions& options) {
  ClusterRender out;
  if (route.rules.empty()) {
    out.reason = reason::kBackendNotFound;
    out.message = "no rules in route";
    return out;
  }
  config::Cluster cluster{
      .name = route.meta.key().str(), .type = "STATIC", .protocol = route.isTcp() ? "TCP" : "UDP"};
  std::vector<std::string> failures;
  bool typed = false;  // the first backend with endpoints sets the cluster's type
  for (const k8s::RouteRule& rule : route.rules) {
    for (const k8s::BackendRef& ref : rule.backendRefs) {
      Backend b = resolveBackend(route, ref, snapshot, options);
      if (!b.reason.empty()) {
        out.reason = b.reason;
        failures.push_back(b.message);
      }
      if (!b.endpoints.empty() && typed && b.type != cluster.type) {
        // One cluster has one type: STUNner skips such a backend too (InconsistentClusterType).
        out.reason = reason::kBackendNotFound;
        failures.push_back("backend " + ref.name + ": a " + b.type + " backend in a " +
                           cluster.type + " cluster (endpoint discovery is off for Services)");
        continue;
      }
      if (!b.endpoints.empty() && !typed) {
        cluster.type = b.type;
        typed = true;
      }
      for (std::string& ep : b.endpoints) {
        // An EndpointSlice of addressType FQDN or a mistyped StaticService prefix would make
        // the whole dataplane config invalid; drop just that endpoint and say so.
        const bool dns = b.type == "STRICT_DNS";
        if (dns ? !config::parseDnsEndpoint(ep) : !config::parseEndpoint(ep)) {
          out.reason = reason::kBackendNotFound;
          failures.push_back("backend " + ref.name + ": endpoint \"" + ep +
                             "\" is not an IP prefix");
          continue;
        }
        if (std::find(cluster.endpoints.begin(), cluster.endpoints.end(), ep) ==
            cluster.endpoints.end()) {
          cluster.endpoints.push_back(std::move(ep));
        }
      }
    }
  }
  for (const std::string& f : failures) {
    out.message += (out.message.empty() ? "" : "; ") + f;
  }
  out.cluster = std::move(cluster);
  return out;
}

}  // namespace kturn::op
