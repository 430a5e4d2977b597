#include "operator/listener_protocol.h"

namespace kturn::op {

std::optional<ListenerProtocolInfo> listenerProtocol(std::string_view p) {
  if (p == "TURN-UDP" || p == "UDP")
    return ListenerProtocolInfo{"TURN-UDP", ServiceProtocol::kUdp, false};
  if (p == "TURN-TCP" || p == "TCP")
    return ListenerProtocolInfo{"TURN-TCP", ServiceProtocol::kTcp, false};
  if (p == "TURN-TLS" || p == "TLS")
    return ListenerProtocolInfo{"TURN-TLS", ServiceProtocol::kTcp, true};
  if (p == "TURN-DTLS" || p == "DTLS") {
    return ListenerProtocolInfo{"TURN-DTLS", ServiceProtocol::kUdp, true};
  }
  return std::nullopt;
}

std::string_view toString(ServiceProtocol protocol) {
  return protocol == ServiceProtocol::kUdp ? "UDP" : "TCP";
}

}  // namespace kturn::op
