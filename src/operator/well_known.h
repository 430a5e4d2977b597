// Names STUNner's operator puts on and reads from Kubernetes objects (stunner-gateway-operator
// pkg/config/defaults.go, stunner pkg/apis/v1/default.go). Kept verbatim: kubectl selectors,
// dashboards and cloud LB controllers that STUNner users run key on them.
#pragma once

#include <string_view>

namespace kturn::op {

// Labels on the owned Deployment and Service, and on the stunnerd pods.
inline constexpr std::string_view kOwnedByLabel = "stunner.l7mp.io/owned-by";
inline constexpr std::string_view kOwnedByValue = "stunner";
inline constexpr std::string_view kRelatedGatewayName = "stunner.l7mp.io/related-gateway-name";
inline constexpr std::string_view kRelatedGatewayNamespace =
    "stunner.l7mp.io/related-gateway-namespace";
inline constexpr std::string_view kAppLabel = "app";
inline constexpr std::string_view kAppValue = "stunner";

// Gateway (or GatewayConfig loadBalancerServiceAnnotations) annotations.
inline constexpr std::string_view kServiceTypeAnnotation = "stunner.l7mp.io/service-type";
inline constexpr std::string_view kMixedProtocolAnnotation =
    "stunner.l7mp.io/enable-mixed-protocol-lb";
inline constexpr std::string_view kExternalTrafficPolicyAnnotation =
    "stunner.l7mp.io/external-traffic-policy";
inline constexpr std::string_view kDisableManagedDataplaneAnnotation =
    "stunner.l7mp.io/disable-managed-dataplane";
inline constexpr std::string_view kNodePortAnnotation = "stunner.l7mp.io/nodeport";
inline constexpr std::string_view kTargetPortAnnotation = "stunner.l7mp.io/targetport";
inline constexpr std::string_view kDisableHealthCheckExposeAnnotation =
    "stunner.l7mp.io/disable-health-check-expose";
inline constexpr std::string_view kDisableSessionAffinityAnnotation =
    "stunner.l7mp.io/disable-session-affinity";

// kturn's own Gateway annotation (not STUNner's): "none" serves this Gateway's config over CDS
// without authentication, to clients that send no token (stunnerd), when the operator
// authenticates CDS clients (docs/cds.md#authentication).
inline constexpr std::string_view kCdsAuthAnnotation = "kturn.io/config-discovery-auth";
inline constexpr std::string_view kCdsAuthNone = "none";
// Where the rendered dataplane pods find their CDS token.
inline constexpr std::string_view kCdsTokenVolume = "kturn-cds-token";
inline constexpr std::string_view kCdsTokenDirectory = "/var/run/secrets/kturn.io/cds";
inline constexpr int64_t kCdsTokenExpirationSeconds = 3600;

// Defaults of the operator (internal/config/dataplane.go, pkg/config/defaults.go).
inline constexpr std::string_view kDefaultControllerName = "stunner.l7mp.io/gateway-operator";
inline constexpr std::string_view kDefaultDataplaneName = "default";
inline constexpr std::string_view kStunnerdContainerName = "stunner-daemon";
inline constexpr std::string_view kListenerAddress = "$STUNNER_ADDR";  // the pod IP at runtime
// STUNner's admin endpoints of the dataplane, "http://:8080/metrics" and "http://:8086"; a
// Gateway's own ports may differ (AdminPorts, deployment_renderer.h).
inline constexpr int kMetricsPort = 8080;
inline constexpr int kHealthCheckPort = 8086;
inline constexpr std::string_view kHealthCheckPortName = "gateway-health-check";
inline constexpr int64_t kTerminationGraceSeconds = 3600;
inline constexpr int kMinPort = 1;
inline constexpr int kMaxPort = 65535;

}  // namespace kturn::op
