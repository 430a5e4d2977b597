// What the renderer's focused tests share: a platform (a GatewayClass of STUNner's controller and
// its GatewayConfig, ephemeral auth), rendering YAML manifests, and finding a status.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "k8s/manifest.h"
#include "operator/cluster_snapshot.h"
#include "operator/renderer.h"

namespace kturn::op::test {

inline constexpr const char* kPlatform = R"(
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gc}
spec:
  controllerName: stunner.l7mp.io/gateway-operator
  parametersRef: {group: stunner.l7mp.io, kind: GatewayConfig, name: cfg, namespace: stunner}
---
apiVersion: stunner.l7mp.io/v1
kind: GatewayConfig
metadata: {name: cfg, namespace: stunner}
spec: {authType: ephemeral, sharedSecret: s}
---
)";

inline RenderResult renderYaml(const std::string& yaml, const RenderOptions& options = {}) {
  auto objects = k8s::loadManifests(yaml);
  EXPECT_TRUE(objects) << objects.error().message;
  return render(ClusterSnapshot::fromObjects(std::move(*objects)), options);
}

inline const StatusUpdate* statusOf(const RenderResult& r, std::string_view kind,
                                    std::string_view name) {
  for (const StatusUpdate& s : r.statuses) {
    if (s.kind == kind && s.key.name == name) return &s;
  }
  return nullptr;
}

}  // namespace kturn::op::test
