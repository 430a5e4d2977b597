// A Gateway's listeners as dataplane listeners (STUNner listener_render.go and gateway_util.go):
// named `<ns>/<gateway>/<listener>`, bound to $STUNNER_ADDR (the pod IP), protocol normalized,
// TLS/DTLS certificate and key from the first usable certificateRefs Secret (keys tls.crt/tls.key,
// or crt/cert and key), base64-encoded PEM. Usable, unlike in STUNner, means it loads: a PEM
// certificate and a PEM private key that belongs to it. One valid at options.now is preferred;
// the listener's kturn.io/CertificateValid condition gives the dates of the one served.
//
// A listener is left out of the dataplane config, with its conditions saying why, when its
// protocol is unknown (Accepted False UnsupportedProtocol), its port is outside 1-65535
// (Accepted False UnsupportedValue), an earlier listener has the same port and transport
// (Conflicted True ProtocolConflict, Accepted False PortUnavailable), or it needs a certificate
// and none resolves (ResolvedRefs False InvalidCertificateRef or RefNotPermitted, naming each
// Secret tried and what is wrong with it). The Gateway's other listeners are rendered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/listener.h"
#include "k8s/gateway_api.h"
#include "operator/cluster_snapshot.h"
#include "operator/condition.h"
#include "operator/render_options.h"

namespace kturn::op {

struct ListenerRender {
  const k8s::GatewayListener* spec = nullptr;
  // Set when the listener goes into the dataplane config; public address, port override and
  // routes are filled in by the Gateway renderer.
  std::optional<config::Listener> config{};
  Conditions conditions{};  // Accepted, Conflicted, ResolvedRefs; Programmed comes later
};

// `problems` are the Gateway's read problems; those under spec.listeners[i] reject listener i.
std::vector<ListenerRender> renderListeners(const k8s::Gateway& gateway,
                                            const ClusterSnapshot& snapshot,
                                            const RenderOptions& options);

}  // namespace kturn::op
