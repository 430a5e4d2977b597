// The ICE configuration kturn-auth answers with, built from the dataplane configs it follows
// (one per gateway) and the query parameters of STUNner's auth service API
// (stunner-auth-service api/stunner.yaml):
//   service             must be "turn"
//   username            user id in ephemeral usernames ("<expiry>:<username>"); default empty
//   ttl                 credential lifetime in seconds; default 86400
//   namespace, gateway, listener
//                       which listeners' URIs to return, across every config; as in STUNner,
//                       `gateway` only counts with `namespace`, and `listener` only with both
//   public-addr         the host to put in the URIs instead of the listeners' addresses (empty:
//                       none, so STUNNER_PUBLIC_ADDR or the listeners' own addresses stay)
//   iceTransportPolicy  echoed in /ice: all (default), relay or public
//   region, client      kturn: the region whose gateways come first, or the client's IP address
//                       that the configured client networks map to one (region_policy.h)
//
// Listener names: the operator renders "<namespace>/<gateway>/<listener>". A listener with a
// name of another shape (a standalone kturnd config) takes namespace and gateway from
// admin.name when that reads "<namespace>/<gateway>", and its whole name as the listener name.
// STUNner's service skips such listeners; kturn serves them so a hand-written config works.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/config_holder.h"
#include "auth/credential.h"
#include "auth/region_policy.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::auth {

struct IceQuery {
  std::string service{};
  std::string username{};
  std::chrono::seconds ttl = kDefaultTtl;
  std::optional<std::string> namespace_name{};
  std::optional<std::string> gateway{};
  std::optional<std::string> listener{};
  std::optional<std::string> public_addr{};
  std::string ice_transport_policy = "all";
  std::optional<std::string> region{};
  std::optional<std::string> client{};
};

// The endpoint a query is for. `/` (the TURN REST API) has no iceTransportPolicy (it is ignored
// there, as by STUNner) and requires `service`; /ice takes iceTransportPolicy.
enum class Endpoint { kTurn, kIce };

// Parses an undecoded query string ("service=turn&ttl=600"). kInvalidArgument naming the
// parameter for what STUNner's parameter binding also refuses: a parameter of the API given more
// than once, a ttl that is not an integer (a leading '+' is one, as Go reads it); and for what
// kturn refuses on purpose: a ttl below zero, an iceTransportPolicy of /ice other than all, relay
// or public, a malformed escape or a ';' in a pair (STUNner drops such a pair and answers as if
// the parameter were not there: a filter lost that way would widen the answer). `/` without a
// service is refused here too (STUNner's router does it before anything else); otherwise the
// value of `service` is the handlers' to check, after they know a config is held (STUNner's
// order: 500 without a config comes before 400 for another service).
Result<IceQuery> parseIceQuery(std::string_view query, Endpoint endpoint = Endpoint::kIce);

struct ListenerId {
  std::string namespace_name;
  std::string gateway;
  std::string listener;
};
ListenerId listenerId(const config::StunnerConfig& config, const config::Listener& listener);

// The RFC 7065 URIs of the listeners the query selects, in config order. A listener is left out
// when it matches no filter, has an unknown protocol, or has no address a client could use (its
// public_address and address are both empty or a wildcard, and no public-addr was asked for).
std::vector<std::string> listenerUris(const config::StunnerConfig& config, const IceQuery& query);

// One RTCIceServer entry: one config's selected listeners and a credential for them.
struct IceServer {
  std::vector<std::string> urls;
  Credential credential;
  std::string region;  // the config's admin.region
};

// The URIs of listenerUris() with a credential minted at `now` (mintCredential's errors). Empty
// urls when no listener is selected, and then no credential is minted.
Result<IceServer> iceServer(const config::StunnerConfig& config, const IceQuery& query,
                            std::chrono::system_clock::time_point now);

// What /ice answers with (and / takes the first of), as STUNner's service builds it
// (internal/handler/ice.go getIceServerConf): one entry per config that has a selected listener,
// each with a credential minted from that config's own auth section, so every gateway gets a
// credential its own kturnd accepts. Entries in id order (STUNner's follow Go's sync.Map, in no
// set order). A config with selected listeners that cannot mint (auth none, no secret) is left
// out, as STUNner leaves it out; its error, prefixed with its id, goes to `errors`.
// With regions (kturn): ordered by `regions.rank()` for the query's region, stable within.
struct IceServerList {
  std::vector<IceServer> servers;
  std::vector<Error> errors;
};
IceServerList iceServers(const ConfigSet& configs, const IceQuery& query,
                         std::chrono::system_clock::time_point now,
                         const RegionPolicy& regions = {});

}  // namespace kturn::auth
