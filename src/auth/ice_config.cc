#include "auth/ice_config.h"

#include <algorithm>
#include <charconv>

#include "cds/url_util.h"
#include "config/turn_uri.h"

namespace kturn::auth {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// A host no client can use: unset, a wildcard, or an environment reference only the dataplane
// pod expands (the operator's `$STUNNER_ADDR`).
bool unusableHost(std::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host.front() == '$';
}

bool selected(const IceQuery& q, const ListenerId& id) {
  if (!q.namespace_name) return true;
  if (*q.namespace_name != id.namespace_name) return false;
  if (!q.gateway) return true;
  if (*q.gateway != id.gateway) return false;
  return !q.listener || *q.listener == id.listener;
}

// The parameters an endpoint reads, each with one value: STUNner's API (api/stunner.yaml; `key`
// is read and not used) and kturn's region and client.
bool isParameter(std::string_view key, Endpoint endpoint) {
  static constexpr std::string_view kParameters[] = {
      "service", "username", "ttl",         "key",    "namespace",
      "gateway", "listener", "public-addr", "region", "client"};
  if (key == "iceTransportPolicy") return endpoint == Endpoint::kIce;
  return std::find(std::begin(kParameters), std::end(kParameters), key) != std::end(kParameters);
}

// The first parameter of the API that the query gives more than once, if any (STUNner refuses
// those with 400: "multiple values for single value parameter"). Malformed pairs are the
// caller's to refuse.
std::optional<std::string> repeatedParameter(std::string_view query, Endpoint endpoint) {
  std::vector<std::string> seen;
  for (const std::string_view pair : split(query, '&')) {
    if (pair.empty()) continue;
    auto key = cds::percentDecode(pair.substr(0, pair.find('=')), true);
    if (!key || !isParameter(*key, endpoint)) continue;
    if (std::find(seen.begin(), seen.end(), *key) != seen.end()) return key;
    seen.push_back(std::move(*key));
  }
  return std::nullopt;
}

}  // namespace

Result<IceQuery> parseIceQuery(std::string_view query, Endpoint endpoint) {
  const auto params = cds::parseQuery(query);
  // Go's query parser also drops a pair with a ';' (no longer a separator since Go 1.17).
  if (!params || query.find(';') != std::string_view::npos) {
    return makeError(Error::Code::kInvalidArgument, "malformed query string");
  }
  if (const auto repeated = repeatedParameter(query, endpoint)) {
    return makeError(Error::Code::kInvalidArgument, *repeated + ": given more than once");
  }
  IceQuery q;
  const auto get = [&](const char* key) -> const std::string* {
    const auto it = params->find(key);
    return it == params->end() ? nullptr : &it->second;
  };
  if (const auto* v = get("service")) q.service = *v;
  if (endpoint == Endpoint::kTurn && q.service.empty()) {
    return makeError(Error::Code::kInvalidArgument, R"("service" must be "turn")");
  }
  if (const auto* v = get("username")) q.username = *v;
  if (const auto* v = get("ttl")) {
    // Decimal digits, with a '+' before them if any (Go's strconv.ParseInt takes one).
    std::string_view digits = *v;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    int64_t ttl = -1;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ttl);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || ttl < 0) {
      return makeError(Error::Code::kInvalidArgument,
                       "ttl: must be a non-negative integer number of seconds");
    }
    q.ttl = std::chrono::seconds(ttl);
  }
  if (const auto* v = get("namespace")) q.namespace_name = *v;
  if (const auto* v = get("gateway")) q.gateway = *v;
  if (const auto* v = get("listener")) q.listener = *v;
  // An empty public-addr is none: the listeners' own addresses (or STUNNER_PUBLIC_ADDR) stay.
  // STUNner's service puts the empty value in, and URIs with 0.0.0.0 come out.
  if (const auto* v = get("public-addr"); v && !v->empty()) q.public_addr = *v;
  if (const auto* v = get("region")) q.region = *v;
  if (const auto* v = get("client")) {
    if (!IpAddress::parse(*v)) {
      return makeError(Error::Code::kInvalidArgument, "client: must be an IP address");
    }
    q.client = *v;
  }
  if (const auto* v = get("iceTransportPolicy"); v && endpoint == Endpoint::kIce) {
    if (*v != "all" && *v != "relay" && *v != "public") {
      return makeError(Error::Code::kInvalidArgument,
                       "iceTransportPolicy: must be all, relay or public");
    }
    q.ice_transport_policy = *v;
  }
  return q;
}

ListenerId listenerId(const config::StunnerConfig& config, const config::Listener& listener) {
  const auto tokens = split(listener.name, '/');
  if (tokens.size() == 3) {
    return {std::string(tokens[0]), std::string(tokens[1]), std::string(tokens[2])};
  }
  ListenerId id;
  id.listener = listener.name;
  const auto gw = split(config.admin.name, '/');
  if (gw.size() == 2) {
    id.namespace_name = std::string(gw[0]);
    id.gateway = std::string(gw[1]);
  }
  return id;
}

std::vector<std::string> listenerUris(const config::StunnerConfig& config, const IceQuery& query) {
  std::vector<std::string> uris;
  for (const config::Listener& l : config.listeners) {
    if (!selected(query, listenerId(config, l))) continue;
    std::string host = query.public_addr.value_or("");
    if (host.empty()) host = !l.public_address.empty() ? l.public_address : l.address;
    // STUNner's auth service names 0.0.0.0 then: the client gets a URI per listener as from
    // STUNner (and a signalling server may put its own host in with public-addr).
    if (unusableHost(host)) host = "0.0.0.0";
    const int port = l.public_port != 0 ? l.public_port : l.port;
    std::string uri = config::formatTurnUri(l.protocolType(), host, port);
    if (!uri.empty()) uris.push_back(std::move(uri));
  }
  return uris;
}

Result<IceServer> iceServer(const config::StunnerConfig& config, const IceQuery& query,
                            std::chrono::system_clock::time_point now) {
  IceServer server;
  server.urls = listenerUris(config, query);
  if (server.urls.empty()) return server;
  auto credential = mintCredential(config.auth, query.username, now, query.ttl);
  if (!credential) return credential.error();
  server.credential = std::move(*credential);
  server.region = config.admin.region;
  return server;
}

IceServerList iceServers(const ConfigSet& configs, const IceQuery& query,
                         std::chrono::system_clock::time_point now, const RegionPolicy& regions) {
  IceServerList list;
  for (const auto& [id, config] : configs) {
    auto server = iceServer(*config, query, now);
    if (!server) {
      list.errors.push_back(makeError(server.error().code, id + ": " + server.error().message));
    } else if (!server->urls.empty()) {
      list.servers.push_back(std::move(*server));
    }
  }
  const std::optional<std::string> wanted = regions.wanted(query.region, query.client);
  std::stable_sort(list.servers.begin(), list.servers.end(),
                   [&](const IceServer& a, const IceServer& b) {
                     return regions.rank(a.region, wanted) < regions.rank(b.region, wanted);
                   });
  return list;
}

}  // namespace kturn::auth
