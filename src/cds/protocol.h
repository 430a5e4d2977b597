// The config discovery service (CDS) protocol as STUNner speaks it (github.com/l7mp/stunner
// pkg/config/{client,server}, pkg/config/api/stunner_openapi.yaml): constants, config ids, the
// list document and the "config deleted" marker. Shared by CdsClient and CdsServer.
//
//   GET /api/v1/configs                      -> 200 {"version":"v1","items":[<config>...]}
//   GET /api/v1/configs/{namespace}          -> 200 {"version":"v1","items":[...]}
//   GET /api/v1/configs/{namespace}/{name}   -> 200 <config> | 404 {"code":404,"message":...}
//   ...?watch=true (WebSocket upgrade)       -> one text message per config: the whole config
//                                               JSON, current state first, then every change
//   ...&node=<node name>                     -> only on the per-name path: the server may patch
//                                               the config for that node
// A deleted config is pushed as a "zero config" (zeroConfig() below); there is no delete verb.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::cds {

inline constexpr uint16_t kDefaultPort = 13478;  // stnrv1.DefaultConfigDiscoveryPort
inline constexpr std::string_view kAllConfigsPath = "/api/v1/configs";

// Client timing (pkg/config/client/client.go).
inline constexpr std::chrono::milliseconds kPingPeriod{5000};   // PingPeriod
inline constexpr std::chrono::milliseconds kPongWait{8000};     // PongWait
inline constexpr std::chrono::milliseconds kWriteWait{2000};    // WriteWait
inline constexpr std::chrono::milliseconds kRetryPeriod{1000};  // RetryPeriod
// Payload of the client's pings and the server's pongs.
inline constexpr std::string_view kKeepalivePayload = "keepalive";

// "namespace/name": how stunnerd names itself to the CDS server (`--id`, or
// STUNNER_NAMESPACE/STUNNER_NAME) and how the server keys configs.
struct ConfigId {
  std::string namespace_;
  std::string name;

  std::string toString() const { return namespace_ + "/" + name; }
  friend bool operator==(const ConfigId&, const ConfigId&) = default;
  friend auto operator<=>(const ConfigId&, const ConfigId&) = default;
};

// Splits at the first '/' (STUNner's NamespacedName: "a/b/c" is namespace "a", name "b/c", which
// no URL path can carry, so kturn refuses it). Both parts must be non-empty.
Result<ConfigId> parseConfigId(std::string_view id);

// "/api/v1/configs/<ns>/<name>", path segments percent-encoded.
std::string configPath(const ConfigId& id);
std::string namespacePath(std::string_view namespace_);

// The config the server pushes when a config is deleted (STUNner's client.ZeroConfig(id)):
// admin.name = id, static auth with the dummy credentials STUNner uses, no listeners, no
// clusters. Validated.
config::StunnerConfig zeroConfig(std::string_view admin_name);
// True when `config` (validated) is the zero config for its own admin.name: the server is telling
// the client that its config was deleted (STUNner's client.IsConfigDeleted).
bool isConfigDeleted(const config::StunnerConfig& config);

// One config as a client reads it: config::parseConfig (`$VAR` substitution from this process's
// environment outside credentials, defaults, validation) when `expand_env`, as kturnd does with
// the config it is about to run; without, the text as the server wrote it, decoded and validated
// (defaults filled), for tools that show a config ("$STUNNER_ADDR" stays "$STUNNER_ADDR").
Result<config::StunnerConfig> parseServedConfig(std::string_view text, bool expand_env);

// {"version":"v1","items":[...]}, items in the given order. Compact JSON, trailing newline like
// Go's json.Encoder.
std::string toListJson(const std::vector<const config::StunnerConfig*>& items);
// Parses and validates every item of a list document (parseServedConfig). An invalid item fails
// the whole list, the error naming it: `items[2].listeners[0].port: must be 1-65535`.
Result<std::vector<config::StunnerConfig>> parseListJson(std::string_view text,
                                                         bool expand_env = true);
// Only the ids of a list document's items, in order: each item's admin.name, or the name
// validation would give it (config::kDefaultStunnerName) when it has none. The items are not
// parsed further, so one bad config cannot hide the others' ids. kMalformed when the document
// is not a list of objects.
Result<std::vector<std::string>> parseListIds(std::string_view text);

}  // namespace kturn::cds
