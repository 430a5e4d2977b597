// What the operator is configured with, as opposed to what it reads from the cluster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operator/well_known.h"

namespace kturn::op {

struct RenderOptions {
  // GatewayClasses naming another controller are left alone (no status, no output).
  std::string controllerName{kDefaultControllerName};
  // The dataplane container when the Dataplane leaves them out. The args are STUNner's (watch
  // the config origin in $STUNNER_CONFIG_ORIGIN, 16 UDP threads): Dataplanes written for STUNner
  // pass them too, so kturnd accepts them.
  std::string dataplaneImage = "kturn/kturnd:latest";
  std::vector<std::string> dataplaneCommand = {"kturnd"};
  std::vector<std::string> dataplaneArgs = {"-w", "--udp-thread-num=16"};
  // Where stunnerd pods fetch their config (STUNNER_CONFIG_ORIGIN); host:port, port defaults to
  // 13478. The operator sets this to its pod address at run time.
  std::string configDiscoveryAddress = ":13478";
  // kturn's authenticated config discovery (docs/cds.md#authentication). On, every Gateway's
  // pods get a projected ServiceAccount token of this audience (KTURN_CDS_TOKEN_FILE) and, with
  // a CA, the config discovery URL over https and the CA in KTURN_CDS_CA; a Gateway annotated
  // kturn.io/config-discovery-auth: none keeps plain, unauthenticated discovery (stunnerd).
  struct CdsClientAuth {
    bool enabled = false;
    std::string audience = "kturn-cds";
    std::string caPem{};  // the CDS server's CA (PEM); empty: plain HTTP

    friend bool operator==(const CdsClientAuth&, const CdsClientAuth&) = default;
  } cdsAuth{};
  // kturn: each Gateway's pods get a NetworkPolicy (network_policy_renderer.h): TURN and relay
  // ports open to all, the admin and metrics ports (8086, 8080) only to this namespace.
  bool dataplaneNetworkPolicy = false;
  std::string metricsNamespace = "monitoring";
  // Off by default, as in STUNner, which never checks them. On (--reference-grants=enforce), a
  // backend in another namespace than its route, or a Gateway's certificate Secret in another
  // namespace than the Gateway, needs a ReferenceGrant there (Gateway API); without one the
  // route or listener gets a RefNotPermitted condition naming the missing grant.
  bool enforceReferenceGrants = false;
  // STUNner's --endpoint-discovery: a Service backend's endpoints are its pods' addresses (its
  // EndpointSlices). Off, it is the Service's DNS name, <name>.<namespace>.svc.cluster.local, in a
  // STRICT_DNS cluster that kturnd resolves (a headless Service's name resolves to its pods).
  bool endpointDiscovery = true;
  // STUNner's EnableRelayToClusterIP: a Service backend admits its ClusterIP besides pod IPs.
  bool relayToClusterIP = true;
  // lastTransitionTime of every condition. The renderer is pure: the caller supplies the clock,
  // and the status applier keeps the old time when a condition did not change.
  std::string transitionTime = "1970-01-01T00:00:00Z";
  // The clock, in seconds since the epoch, against which a listener's certificate dates are
  // judged (kturn.io/CertificateValid). Like transitionTime, not a setting: a change of it alone
  // does not make a render full.
  int64_t now = 0;
  // Gateway labels not copied to the Deployment (pkg/config DefaultLabelFilter): they belong to
  // the tool that applied the Gateway and would make it prune the Deployment.
  std::vector<std::string> labelFilter = {
      "applyset.kubernetes.io/part-of",   "applyset.k8s.io/part-of",
      "app.kubernetes.io/managed-by",     "argocd.argoproj.io/instance",
      "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace",
  };

  friend bool operator==(const RenderOptions&, const RenderOptions&) = default;
};

}  // namespace kturn::op
