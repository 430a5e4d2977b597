// The `auth` section of a dataplane config, from a GatewayConfig: its inline fields (authType,
// userName, password, sharedSecret, realm) or the Secret named by authRef, which wins when set
// (STUNner internal/renderer/auth_render.go).
#pragma once

#include "config/auth.h"
#include "k8s/stunner_api.h"
#include "kturn/result.h"
#include "operator/cluster_snapshot.h"

namespace kturn::op {

// Errors name the object and field: `GatewayConfig stunner/stunner-config: spec.authType "foo":
// must be static or ephemeral`. Every error makes the Gateways of the class unrenderable, as in
// STUNner: a dataplane must not run with credentials nobody meant.
Result<config::Auth> renderAuth(const k8s::GatewayConfig& gatewayConfig,
                                const ClusterSnapshot& snapshot);

}  // namespace kturn::op
