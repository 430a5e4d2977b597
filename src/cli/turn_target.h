// What `kturnctl turncat` and `kturnctl icetest` share: the TURN server a user names, as a URI in
// RFC 7065 form (`turn:host:port?transport=tcp`) or STUNner's (`turn://user:pass@host:port`),
// with the credential and TLS flags next to it, resolved into what client::TurnClient needs.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "client/server_link.h"
#include "client/turn_client.h"
#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace CLI {
class App;
}

namespace kturn::cli {

struct TurnServerFlags {
  std::string user{};      // -u; overrides the URI's user info
  std::string password{};  // -p
  bool insecure = false;   // TURN-TLS/DTLS: accept any certificate
  std::string ca_file{};
  double timeout_seconds = 5;  // connect, handshake and each transaction
};

// Adds -u/--user, -p/--password, --insecure, --ca-file and --timeout to `command`.
void addTurnServerFlags(CLI::App& command, TurnServerFlags& flags);

struct TurnTarget {
  std::string uri{};  // RFC 7065 form, for messages: "turns:127.0.0.1:5349?transport=tcp"
  TransportAddress address{};
  client::LinkTransport transport = client::LinkTransport::kUdp;
  client::LinkOptions link{};
  std::string username{};
  std::string password{};
};

// Parses and resolves (getaddrinfo, first address) the server URI. Errors name what is wrong.
Result<TurnTarget> resolveTurnTarget(std::string_view uri, const TurnServerFlags& flags);

// "udp://host:port" or "host:port" (a name is resolved; an IPv6 host is bracketed).
Result<TransportAddress> resolveUdpAddress(std::string_view text);

// Connects to the target and returns a client ready to allocate a relay address for `peer`:
// of the peer's family, asked for with REQUESTED-ADDRESS-FAMILY only when it differs from the
// server's (RFC 8656 §7.1), so servers without IPv6 relaying see a plain Allocate.
Result<std::unique_ptr<client::TurnClient>> connectTurn(const TurnTarget& target,
                                                        const TransportAddress& peer,
                                                        uint32_t lifetime);

}  // namespace kturn::cli
