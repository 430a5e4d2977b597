#include "config/validator.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <span>
#include <tuple>

#include "config/base64.h"
#include "config/defaults.h"
#include "config/endpoint.h"
#include "config/text_util.h"
#include "kturn/transport_address.h"

namespace kturn::config {
namespace {

Error invalid(const std::string& path, std::string message) {
  return makeError(Error::Code::kInvalidArgument, path + ": " + std::move(message));
}

std::string rangeText(IntRange range) {
  return std::to_string(range.min) + "-" + std::to_string(range.max);
}

// "None, XDP, TC or Auto".
std::string oneOf(std::span<const std::string_view> words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::string at(std::string_view list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

// stunnerd only asks Go's lenient url.Parse to accept the text. We reject what it rejects in
// practice: blanks and control characters, a missing scheme before "://", a non-numeric port.
bool plausibleUrl(std::string_view url) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return true;
  if (sep == 0) return false;
  std::string_view authority = url.substr(sep + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const size_t at_sign = authority.rfind('@'); at_sign != std::string_view::npos) {
    authority.remove_prefix(at_sign + 1);
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    if (!rest.empty()) port = rest.substr(1);
  } else if (std::count(authority.begin(), authority.end(), ':') == 1) {
    port = authority.substr(authority.find(':') + 1);
  }
  return port.find_first_not_of("0123456789") == std::string_view::npos;
}

Result<void> validateAdmin(Admin& a) {
  if (a.name.empty()) a.name = kDefaultStunnerName;
  if (a.loglevel.empty()) a.loglevel = kDefaultLogLevel;
  if (!a.metrics_endpoint.empty() && !plausibleUrl(a.metrics_endpoint)) {
    return invalid("admin.metrics_endpoint", "invalid URL " + quoteText(a.metrics_endpoint));
  }
  if (!a.healthcheck_endpoint) {
    a.healthcheck_endpoint = std::string(kDefaultHealthCheckEndpoint);
  } else if (!plausibleUrl(*a.healthcheck_endpoint)) {
    return invalid("admin.healthcheck_endpoint",
                   "invalid URL " + quoteText(*a.healthcheck_endpoint));
  }
  if (a.user_quota < 0) a.user_quota = 0;  // stunnerd clamps rather than rejects
  if (a.limits) {
    const Limits& l = *a.limits;
    for (const auto& [name, value] : {std::pair{"max_allocations", l.max_allocations},
                                      {"allocation_kbps", l.allocation_kbps},
                                      {"listener_kbps", l.listener_kbps},
                                      {"auth_failures", l.auth_failures},
                                      {"max_connections", l.max_connections},
                                      {"source_quota", l.source_quota}}) {
      if (!kNonNegative.contains(value)) {
        return invalid(std::string("admin.limits.") + name,
                       "must not be negative (0: unlimited), got " + std::to_string(value));
      }
    }
    for (const auto& [name, value, range] :
         {std::tuple{"auth_failure_window", l.auth_failure_window, kAuthFailureWindowRange},
          {"nonce_lifetime", l.nonce_lifetime, kNonceLifetimeRange},
          {"idle_timeout", l.idle_timeout, kIdleTimeoutRange},
          {"handshake_timeout", l.handshake_timeout, kHandshakeTimeoutRange}}) {
      if (!range.contains(value)) {
        return invalid(std::string("admin.limits.") + name,
                       "want " + rangeText(range) + " seconds, got " + std::to_string(value));
      }
    }
    for (const auto& [name, value] :
         {std::pair{"max_permissions", l.max_permissions}, {"max_channels", l.max_channels}}) {
      if (!kPerAllocationRange.contains(value)) {
        return invalid(
            std::string("admin.limits.") + name,
            "must be " + rangeText(kPerAllocationRange) + ", got " + std::to_string(value));
      }
    }
    if (!kBlockSecondsRange.contains(l.block_seconds)) {
      return invalid("admin.limits.block_seconds", "want " + rangeText(kBlockSecondsRange) +
                                                       " seconds, got " +
                                                       std::to_string(l.block_seconds));
    }
    for (size_t i = 0; i < l.trusted_networks.size(); ++i) {
      const auto network = parseEndpoint(l.trusted_networks[i]);
      if (!network || network->has_port_range) {
        return invalid("admin.limits.trusted_networks[" + std::to_string(i) + "]",
                       "want IP[/prefix], got " + quoteText(l.trusted_networks[i]));
      }
    }
  }
  if (a.capacity) {
    const Capacity& c = *a.capacity;
    for (const auto& [name, value] :
         {std::pair{"allocations", c.allocations}, {"relay_kbps", c.relay_kbps}}) {
      if (!kNonNegative.contains(value)) {
        return invalid(std::string("admin.capacity.") + name,
                       "must not be negative (0: no mark), got " + std::to_string(value));
      }
    }
    for (const auto& [name, value, range] :
         {std::tuple{"cpu_percent", c.cpu_percent, kCpuPercentRange},
          {"resume_percent", c.resume_percent, kResumePercentRange}}) {
      if (!range.contains(value)) {
        return invalid(std::string("admin.capacity.") + name,
                       "must be " + rangeText(range) + " (percent), got " + std::to_string(value));
      }
    }
  }

  if (a.offload_engine.empty()) a.offload_engine = kDefaultOffloadEngine;
  const auto engine =
      std::find_if(std::begin(kOffloadEngines), std::end(kOffloadEngines),
                   [&](std::string_view e) { return equalsIgnoreCase(e, a.offload_engine); });
  if (engine == std::end(kOffloadEngines)) {
    return invalid("admin.offload_engine", "unknown offload mode " + quoteText(a.offload_engine) +
                                               " (want " + oneOf(kOffloadEngines) + ")");
  }
  a.offload_engine = *engine;
  std::sort(a.offload_interfaces.begin(), a.offload_interfaces.end());
  return {};
}

Result<void> validateAuth(Auth& a) {
  if (a.type.empty()) a.type = kDefaultAuthType;
  const AuthType type = parseAuthType(a.type);
  if (type == AuthType::kUnknown) {
    return invalid("auth.type", "unknown authentication type " + quoteText(a.type) +
                                    " (want static, ephemeral or none)");
  }
  a.type = toString(type);
  // Presence is what stunnerd checks; an empty value is accepted as it is there.
  if (type == AuthType::kStatic) {
    for (const char* key : {"username", "password"}) {
      if (!a.credential(key)) {
        return invalid(std::string("auth.credentials.") + key, "required for static auth");
      }
    }
  } else if (type == AuthType::kEphemeral && !a.secret()) {
    return invalid("auth.credentials.secret", "required for ephemeral auth");
  }
  if (type == AuthType::kEphemeral && a.previousSecret() && !a.previousSecretExpiry()) {
    return invalid("auth.credentials.previous_secret_expiry",
                   "required with previous_secret: unix seconds or RFC 3339 UTC "
                   "(2026-12-01T00:00:00Z)");
  }
  if (a.realm.empty()) a.realm = kDefaultRealm;
  for (size_t i = 0; i < a.oauth_keys.size(); ++i) {
    if (auto key = parseOAuthKey(a.oauth_keys[i]); !key) {
      return invalid("auth.oauth_keys[" + std::to_string(i) + "]", key.error().message);
    }
  }
  return {};
}

Result<void> validateRelayPorts(Listener& l, const std::string& path) {
  for (auto [value, name] : {std::pair{&l.min_relay_port, ".min_relay_port"},
                             std::pair{&l.max_relay_port, ".max_relay_port"}}) {
    if (*value != 0 && !kPortRange.contains(*value)) {
      return invalid(path + name, "must be " + rangeText(kPortRange));
    }
  }
  if (l.min_relay_port == 0 && l.max_relay_port == 0) return {};  // kernel ephemeral range
  if (l.min_relay_port == 0) l.min_relay_port = kDefaultMinRelayPort;
  if (l.max_relay_port == 0) l.max_relay_port = kDefaultMaxRelayPort;
  if (l.min_relay_port > l.max_relay_port) {
    return invalid(path + ".max_relay_port",
                   "must not be below min_relay_port (" + std::to_string(l.min_relay_port) + ")");
  }
  return {};
}

Result<void> validateTlsMaterial(const Listener& l, ListenerProtocol protocol,
                                 const std::string& path) {
  for (auto [value, name] : {std::pair{&l.cert, "cert"}, std::pair{&l.key, "key"}}) {
    if (value->empty()) {
      return invalid(path + "." + name,
                     "required for " + std::string(toString(protocol)) + " listeners");
    }
    if (!decodeBase64(*value)) return invalid(path + "." + name, "not valid base64");
  }
  return {};
}

// "$NAME" or "${NAME}", NAME of [A-Za-z0-9_]+: a value left for the dataplane to expand.
bool isEnvReference(std::string_view text) {
  if (text.size() >= 4 && text.substr(0, 2) == "${" && text.back() == '}') {
    text = text.substr(2, text.size() - 3);
  } else if (text.size() >= 2 && text[0] == '$') {
    text = text.substr(1);
  } else {
    return false;
  }
  for (const char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return !text.empty();
}

Result<void> validateListener(Listener& l, const std::string& path) {
  if (l.name.empty()) return invalid(path + ".name", "required");
  if (l.protocol.empty()) l.protocol = kDefaultListenerProtocol;
  const ListenerProtocol protocol = parseListenerProtocol(l.protocol);
  if (protocol == ListenerProtocol::kUnknown) {
    return invalid(path + ".protocol", "unknown listener protocol " + quoteText(l.protocol) +
                                           " (want TURN-UDP, TURN-TCP, TURN-TLS or TURN-DTLS)");
  }
  l.protocol = normalizeListenerProtocol(l.protocol);

  if (l.address.empty()) l.address = kDefaultListenerAddress;
  // stunnerd resolves a host name in `address`; `localhost` is the one a config can carry
  // portably (STUNner's own examples do), so it is read as the loopback address it names.
  if (toLower(l.address) == "localhost") l.address = "127.0.0.1";
  // The operator renders `$STUNNER_ADDR` (the pod IP) and serves the config as written over
  // CDS; the dataplane expands it and validates again. So an address that is exactly one
  // environment reference passes here; kturnd never sees one, having expanded it before.
  if (!IpAddress::parse(l.address) && !isEnvReference(l.address)) {
    return invalid(path + ".address", "invalid IP address " + quoteText(l.address));
  }
  if (toLower(l.bind_address) == "localhost") l.bind_address = "127.0.0.1";
  if (!l.bind_address.empty() && !IpAddress::parse(l.bind_address)) {
    return invalid(path + ".bind_address", "invalid IP address " + quoteText(l.bind_address));
  }
  if (l.port == 0) l.port = kDefaultPort;
  if (!kPortRange.contains(l.port))
    return invalid(path + ".port", "must be " + rangeText(kPortRange));
  if (l.public_port != 0 && !kPortRange.contains(l.public_port)) {  // 0: unset
    return invalid(path + ".public_port", "must be " + rangeText(kPortRange));
  }
  if (auto r = validateRelayPorts(l, path); !r) return r;
  if (needsCertificate(protocol)) {
    if (auto r = validateTlsMaterial(l, protocol, path); !r) return r;
  }
  std::sort(l.routes.begin(), l.routes.end());
  for (size_t i = 0; i < l.alternate_servers.size(); ++i) {
    const auto alternate = TransportAddress::parse(l.alternate_servers[i]);
    if (!alternate || alternate->port == 0 || alternate->ip.isUnspecified()) {
      return invalid(path + ".alternate_servers[" + std::to_string(i) + "]",
                     "want IP:port (or [IPv6]:port), got " + quoteText(l.alternate_servers[i]));
    }
  }
  return {};
}

Result<void> validateCluster(Cluster& c, const std::string& path) {
  if (c.name.empty()) return invalid(path + ".name", "required");
  if (c.type.empty()) c.type = kDefaultClusterType;
  const ClusterType type = c.clusterType();
  if (type == ClusterType::kUnknown) {
    return invalid(path + ".type",
                   "unknown cluster type " + quoteText(c.type) + " (want STATIC or STRICT_DNS)");
  }
  c.type = toString(type);
  if (c.protocol.empty()) c.protocol = kDefaultClusterProtocol;
  const ClusterProtocol protocol = c.clusterProtocol();
  if (protocol == ClusterProtocol::kUnknown) {
    return invalid(path + ".protocol",
                   "unknown cluster protocol " + quoteText(c.protocol) + " (want UDP or TCP)");
  }
  c.protocol = toString(protocol);

  // The parsers prefix "endpoints[i]: ".
  const Result<void> endpoints = [&]() -> Result<void> {
    if (type == ClusterType::kStatic) {
      if (auto r = c.staticEndpoints(); !r) return r.error();
    } else if (auto r = c.dnsEndpoints(); !r) {
      return r.error();
    }
    return {};
  }();
  if (!endpoints) {
    return makeError(Error::Code::kInvalidArgument, path + "." + endpoints.error().message);
  }
  std::sort(c.endpoints.begin(), c.endpoints.end());
  return {};
}

// Runs check over each element, then rejects a name used twice: stunnerd keys its listeners and
// clusters by name, so a duplicate silently replaces the first.
template <class T, class Check>
Result<void> validateNamed(std::vector<T>& items, std::string_view list, std::string_view noun,
                           Check check) {
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string path = at(list, i);
    if (auto r = check(items[i], path); !r) return r;
    if (!seen.insert(items[i].name).second) {
      return invalid(path + ".name",
                     "duplicate " + std::string(noun) + " name " + quoteText(items[i].name));
    }
  }
  return {};
}

// validateNamed(), but an element that fails, or repeats a name, is taken out and reported in
// `faults` instead of failing the whole list.
template <class T, class Check>
void isolateNamed(std::vector<T>& items, std::string_view list, std::string_view noun, Check check,
                  std::vector<ConfigFault>& faults) {
  std::set<std::string> seen;
  std::vector<T> kept;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string path = at(list, i);
    Result<void> checked = check(items[i], path);
    if (checked && !seen.insert(items[i].name).second) {
      checked = invalid(path + ".name",
                        "duplicate " + std::string(noun) + " name " + quoteText(items[i].name));
    }
    if (!checked) {
      faults.push_back({std::string(noun), items[i].name, checked.error().message});
      continue;
    }
    kept.push_back(std::move(items[i]));
  }
  items = std::move(kept);
}

Result<void> validateGlobal(StunnerConfig& config) {
  // v1alpha1 carries v1's fields; its auth type names are aliases validateAuth() normalizes.
  if (config.version == kLegacyApiVersion) config.version = std::string(kApiVersion);
  if (config.version != kApiVersion) {
    return invalid("version", "unsupported API version " + quoteText(config.version) + " (want " +
                                  quoteText(kApiVersion) + ")");
  }
  if (auto r = validateAdmin(config.admin); !r) return r;
  return validateAuth(config.auth);
}

}  // namespace

Result<std::vector<ConfigFault>> validateIsolating(StunnerConfig& config) {
  if (auto r = validateGlobal(config); !r) return r.error();
  std::vector<ConfigFault> faults;
  isolateNamed(config.listeners, "listeners", "listener", validateListener, faults);
  isolateNamed(config.clusters, "clusters", "cluster", validateCluster, faults);
  return faults;
}

Result<void> validate(StunnerConfig& config) {
  if (auto r = validateGlobal(config); !r) return r;
  if (auto r = validateNamed(config.listeners, "listeners", "listener", validateListener); !r) {
    return r;
  }
  return validateNamed(config.clusters, "clusters", "cluster", validateCluster);
}

std::vector<std::string> danglingRoutes(const StunnerConfig& config) {
  std::vector<std::string> out;
  for (size_t i = 0; i < config.listeners.size(); ++i) {
    const auto& routes = config.listeners[i].routes;
    for (size_t k = 0; k < routes.size(); ++k) {
      if (config.findCluster(routes[k]) == nullptr) {
        out.push_back(at("listeners", i) + "." + at("routes", k) + ": no cluster named " +
                      quoteText(routes[k]));
      }
    }
  }
  return out;
}

}  // namespace kturn::config
