#include "config/listener.h"

#include "config/text_util.h"

namespace kturn::config {

ListenerProtocol parseListenerProtocol(std::string_view text) {
  const std::string t = toUpper(text);
  if (t == "TURN-UDP" || t == "UDP") return ListenerProtocol::kTurnUdp;
  if (t == "TURN-TCP" || t == "TCP") return ListenerProtocol::kTurnTcp;
  if (t == "TURN-TLS" || t == "TLS") return ListenerProtocol::kTurnTls;
  if (t == "TURN-DTLS" || t == "DTLS") return ListenerProtocol::kTurnDtls;
  return ListenerProtocol::kUnknown;
}

std::string_view toString(ListenerProtocol protocol) {
  switch (protocol) {
    case ListenerProtocol::kTurnUdp:
      return "TURN-UDP";
    case ListenerProtocol::kTurnTcp:
      return "TURN-TCP";
    case ListenerProtocol::kTurnTls:
      return "TURN-TLS";
    case ListenerProtocol::kTurnDtls:
      return "TURN-DTLS";
    case ListenerProtocol::kUnknown:
      break;
  }
  return "<unknown>";
}

std::string normalizeListenerProtocol(std::string_view text) { return toUpper(text); }

bool needsCertificate(ListenerProtocol protocol) {
  return protocol == ListenerProtocol::kTurnTls || protocol == ListenerProtocol::kTurnDtls;
}

}  // namespace kturn::config
