// Gateway listener protocols as STUNner reads them (listener_render.go getProtocol): TURN-UDP,
// TURN-TCP, TURN-TLS, TURN-DTLS, and the bare UDP, TCP, TLS, DTLS which mean the same since
// STUNner v0.16. Case-sensitive, like STUNner.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kturn::op {

enum class ServiceProtocol { kUdp, kTcp };

struct ListenerProtocolInfo {
  std::string dataplaneName{};        // "TURN-UDP", ... as written into the dataplane config
  ServiceProtocol serviceProtocol{};  // the Service port's protocol: UDP for UDP/DTLS
  bool needsCertificate{};            // TLS and DTLS
};

std::optional<ListenerProtocolInfo> listenerProtocol(std::string_view gatewayProtocol);
std::string_view toString(ServiceProtocol protocol);

}  // namespace kturn::op
