// listeners[]: the server sockets TURN clients connect to (pkg/apis/v1/listener.go).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kturn::config {

// The transport a listener speaks TURN over. STUNner's bare "UDP", "TCP", "TLS" and "DTLS" are
// aliases of the TURN-* names: the application protocol is always TURN.
enum class ListenerProtocol { kUnknown, kTurnUdp, kTurnTcp, kTurnTls, kTurnDtls };

// Case-insensitive; accepts TURN-UDP|TURN-TCP|TURN-TLS|TURN-DTLS and UDP|TCP|TLS|DTLS.
ListenerProtocol parseListenerProtocol(std::string_view text);
// "TURN-UDP", "TURN-TCP", "TURN-TLS", "TURN-DTLS".
std::string_view toString(ListenerProtocol protocol);
// Upper-cases a known protocol name the way STUNner normalizes it: "udp" becomes "UDP" (not
// "TURN-UDP"), so a normalized config still reads like the one the operator rendered.
std::string normalizeListenerProtocol(std::string_view text);
bool needsCertificate(ListenerProtocol protocol);

struct Listener {
  std::string name{};      // required, unique among listeners
  std::string protocol{};  // default "TURN-UDP"
  // Where clients reach the listener from outside (a LoadBalancer IP); informational only.
  std::string public_address{};
  int public_port = 0;
  // The relay address: the IP that XOR-RELAYED-ADDRESS names, as in stunnerd. Default "0.0.0.0":
  // the address the client reached. Not bound, except a loopback address (see bind_address).
  std::string address{};
  int port = 0;  // default 3478
  // kturn's own: the IP the listener binds. Empty (the default) binds every address, "::" dual
  // stack, as stunnerd does, or only `address` when that is a loopback address.
  std::string bind_address{};
  // Port range for relay sockets. 0/0 (the default) means the kernel's ephemeral range. STUNner
  // dropped these fields from v1 in 2023; kturn still reads them so such configs keep working.
  int min_relay_port = 0;
  int max_relay_port = 0;
  // Base64 of the PEM certificate chain and private key, required for TURN-TLS and TURN-DTLS.
  // Kept encoded: the TLS layer decodes them.
  std::string cert{};
  std::string key{};
  std::vector<std::string> routes{};  // names of the clusters this listener may relay to
  // kturn's own: where to send clients when this server is full (RFC 8489 §10, 300 Try
  // Alternate): "IP:port" of siblings serving the same transport, in order of preference; an
  // Allocate refused for capacity names the first of the client's address family.
  std::vector<std::string> alternate_servers{};
  // kturn's own: the sibling's domain name, sent as ALTERNATE-DOMAIN on TURN-TLS and TURN-DTLS
  // listeners so that the client verifies the sibling's certificate against it.
  std::string alternate_domain{};

  ListenerProtocol protocolType() const { return parseListenerProtocol(protocol); }

  friend bool operator==(const Listener&, const Listener&) = default;
};

}  // namespace kturn::config
