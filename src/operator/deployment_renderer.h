// The stunnerd Deployment of a Gateway (STUNner internal/renderer/dataplane_util.go): named after
// the Gateway, in its namespace, owned by it, its pod template taken from the Dataplane.
//
//   labels         the Gateway's (minus RenderOptions::labelFilter), owned-by, related-gateway-*
//   annotations    the Gateway's, related-gateway-name: <ns>/<gateway>
//   pods           app: stunner and related-gateway-* (the selector), the Dataplane's labels and
//                  annotations; Gateway labels are not copied down, so editing them does not
//                  restart the pods
//   container      stunner-daemon: image, command, args, env (STUNNER_ADDR = pod IP,
//                  STUNNER_NAME/NAMESPACE, STUNNER_NODENAME, STUNNER_CONFIG_ORIGIN = the config
//                  discovery URL, then the Dataplane's env), resources, probes on :8086
//                  /live and /ready unless disableHealthCheck, metrics port 8080
//   CDS auth       (kturn, RenderOptions::cdsAuth) a projected ServiceAccount token volume,
//                  KTURN_CDS_TOKEN_FILE and KTURN_CDS_CA, the origin over https
//   pod            terminationGracePeriodSeconds (3600 by default: draining TURN allocations
//                  takes long), hostNetwork, affinity, tolerations, security contexts, image pull
//                  secrets, topology spread constraints
// With Dataplane spec.dataplaneResource: DaemonSet the same pod template goes into a DaemonSet.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/gateway_api.h"
#include "k8s/object.h"
#include "k8s/stunner_api.h"
#include "operator/render_options.h"
#include "operator/well_known.h"

namespace kturn::op {

// Whether the Gateway opts out of authenticated config discovery (kCdsAuthAnnotation: none).
bool cdsOpen(const k8s::Gateway& gateway);

// The ports of a Gateway's kturnd admin endpoints: health (/live, /ready, the probes) and
// metrics. STUNner's 8086 and 8080, except where the pods of several Gateways may share a node's
// ports: a hostNetwork Dataplane's pods get a pair of the Gateway's own, derived from its
// namespace and name (health 18000 + 2 * (FNV-1a % 1000), metrics the next port), so two such
// Gateways on one node do not clash. kturn.io/health-check-port (`health`) sets the health port
// of any Gateway, metrics on the next one.
struct AdminPorts {
  int health = kHealthCheckPort;
  int metrics = kMetricsPort;
};
AdminPorts adminPorts(const k8s::Gateway& gateway, const k8s::Dataplane& dataplane,
                      std::optional<int> health);

k8s::Object renderDeployment(const k8s::Gateway& gateway, const k8s::Dataplane& dataplane,
                             const RenderOptions& options, const AdminPorts& ports = {});

// The Dataplane used when the cluster has none named "default": what STUNner's Helm chart
// installs, with the image and command of RenderOptions.
k8s::Dataplane builtinDataplane(const RenderOptions& options);

// RenderOptions::labelFilter from STUNNER_GATEWAY_OPERATOR_LABEL_FILTER's comma-separated keys,
// blanks around each trimmed and empty ones dropped, as STUNner's operator reads it.
std::vector<std::string> labelFilterFrom(std::string_view commaSeparated);

// "http://host:port" (https with `tls`) for STUNNER_CONFIG_ORIGIN; the port defaults to 13478,
// IPv6 is bracketed.
std::string configDiscoveryUrl(const std::string& address, bool tls = false);

}  // namespace kturn::op
