// `kturnctl auth`: a TURN credential, or an ICE server configuration, exactly as kturn-auth
// answers it (docs/auth.md): minted here from a dataplane config's auth section (-c: a file, a
// TURN URI or a CDS server, the origins kturnd takes), or asked from a running kturn-auth
// (--auth-server). Local minting goes through kturn-auth's own request handlers, so the two
// outputs are the same document.
//   kturnctl auth -c /etc/kturn/stunnerd.conf --username alice      {username,password,ttl,uris}
//   kturnctl auth -c http://cds:13478 --id media/gw --service ice   {iceServers,...}
//   kturnctl auth --auth-server http://kturn-auth:8088 --ttl 600
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kturn::cli {

inline constexpr uint16_t kDefaultAuthServerPort = 8088;  // kturn-auth's and STUNner's

struct AuthCommand {
  std::string origin{};          // -c; empty: $STUNNER_CONFIG_ORIGIN
  std::string id{};              // CDS origins; empty: $STUNNER_NAMESPACE/$STUNNER_NAME
  std::string auth_server{};     // ask this kturn-auth instead of minting
  std::string service = "turn";  // "turn": GET / (TURN REST API); "ice": GET /ice
  std::string username{};        // user id in an ephemeral username
  int64_t ttl = 86400;           // seconds
  // Listener selection and URI host, as kturn-auth's query parameters; empty: not sent.
  std::string namespace_{};
  std::string gateway{};
  std::string listener{};
  std::string public_addr{};
  std::string ice_transport_policy{};
  std::string token_file{};     // --auth-server: bearer token
  std::string output = "json";  // or "yaml"
  double timeout_seconds = 5;
  // Not a flag: the time credentials are minted at, for tests.
  std::function<std::chrono::system_clock::time_point()> clock = std::chrono::system_clock::now;
};

// Registers the `auth` subcommand; `command` must outlive `app`.
CLI::App* addAuthCommand(CLI::App& app, AuthCommand& command);

// Returns an exit status (exit_codes.h): a config that cannot be loaded or cannot mint (auth
// none, no listener selected), an unreachable server or an error answer is kExitFailure.
int runAuth(const AuthCommand& command, std::ostream& out, std::ostream& err);

// The query string kturn-auth is asked with (and that local minting parses):
// "service=turn&username=alice&ttl=600&namespace=...", values percent-encoded.
std::string authQuery(const AuthCommand& command);

}  // namespace kturn::cli
