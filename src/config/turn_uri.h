// TURN server URIs as stunnerd reads them from its command line (stunner uri.go ParseUri):
//   turn://user:pass@127.0.0.1:3478?transport=udp
// The scheme and transport pick the listener protocol:
//   turn  + udp (default) -> TURN-UDP        turns + udp -> TURN-DTLS
//   turn  + tcp           -> TURN-TCP        turns + tcp -> TURN-TLS
//   any   + tls           -> TURN-TLS        any   + dtls -> TURN-DTLS   (pre-RFC 7065 style)
// The port defaults to 3478, or to 443 for TURN-TLS and TURN-DTLS.
#pragma once

#include <string>
#include <string_view>

#include "config/listener.h"
#include "kturn/result.h"

namespace kturn::config {

struct TurnUri {
  ListenerProtocol protocol = ListenerProtocol::kTurnUdp;
  std::string host{};  // as written, without IPv6 brackets
  int port = 3478;
  std::string username{};  // percent-decoded
  std::string password{};  // percent-decoded

  friend bool operator==(const TurnUri&, const TurnUri&) = default;
};

Result<TurnUri> parseTurnUri(std::string_view uri);

// The RFC 7065 URI a client (an RTCIceServer's urls) uses to reach a listener of `protocol` at
// host:port: "turn:198.51.100.7:3478?transport=udp", "turn:...?transport=tcp" for TURN-TCP,
// "turns:...?transport=tcp" for TURN-TLS, "turns:...?transport=udp" for TURN-DTLS. An IPv6 host
// is bracketed. Empty for kUnknown.
std::string formatTurnUri(ListenerProtocol protocol, std::string_view host, int port);

}  // namespace kturn::config
