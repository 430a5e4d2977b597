#include "config/decoder.h"

#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <utility>

#include "config/text_util.h"

namespace kturn::config {
namespace {

using Path = std::string;

Path join(const Path& parent, std::string_view field) {
  return parent.empty() ? std::string(field) : parent + "." + std::string(field);
}

Path index(const Path& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      return "a mapping";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return "a string " + quoteText(v.get_ref<const std::string&>());
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_float:
      return "a number " + v.dump();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    default:
      return "null";
  }
}

Error typeError(const Path& path, std::string_view expected, const Json& got) {
  return makeError(Error::Code::kMalformed,
                   path + ": expected " + std::string(expected) + ", got " + describe(got));
}

// A string field takes any scalar: YAML scalars arrive as text, and stunnerd's YAML reader turns
// a JSON number or boolean into its text when the field is a string (`password: 1234`).
Result<void> readString(const Json& v, const Path& path, std::string& out) {
  if (v.is_null()) return {};
  if (v.is_string()) {
    out = v.get<std::string>();
  } else if (v.is_number() || v.is_boolean()) {
    out = v.dump();
  } else {
    return typeError(path, "a string", v);
  }
  return {};
}

// A boolean, or its YAML spelling as a string (the YAML reader keeps scalars as text).
Result<void> readBool(const Json& v, const Path& path, bool& out) {
  if (v.is_null()) return {};
  if (v.is_boolean()) {
    out = v.get<bool>();
    return {};
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    for (const auto& [text, value] :
         {std::pair{"true", true}, std::pair{"True", true}, std::pair{"TRUE", true},
          std::pair{"false", false}, std::pair{"False", false}, std::pair{"FALSE", false}}) {
      if (s == text) {
        out = value;
        return {};
      }
    }
  }
  return typeError(path, "true or false", v);
}

Result<void> readOptionalString(const Json& v, const Path& path, std::optional<std::string>& out) {
  if (v.is_null()) return {};
  std::string s;
  if (auto r = readString(v, path, s); !r) return r;
  out = std::move(s);
  return {};
}

// An integer field takes a JSON integer, or a YAML plain scalar / string holding a decimal integer
// (stunnerd rejects a quoted "3478"; accepting it costs nothing).
Result<void> readInt(const Json& v, const Path& path, int& out) {
  if (v.is_null()) return {};
  std::optional<int64_t> value;
  if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) value = u;
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e15) {
      value = static_cast<int64_t>(d);
    }
  } else if (v.is_string()) {
    value = parseGoInt(v.get_ref<const std::string&>());
  }
  if (!value) return typeError(path, "an integer", v);
  if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max()) {
    return makeError(Error::Code::kMalformed, path + ": integer out of range");
  }
  out = static_cast<int>(*value);
  return {};
}

Result<void> readStringList(const Json& v, const Path& path, std::vector<std::string>& out) {
  if (v.is_null()) return {};
  if (!v.is_array()) return typeError(path, "a list", v);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string s;
    if (auto r = readString(v[i], index(path, i), s); !r) return r;
    out.push_back(std::move(s));
  }
  return {};
}

Result<void> readStringMap(const Json& v, const Path& path,
                           std::map<std::string, std::string>& out) {
  if (v.is_null()) return {};
  if (!v.is_object()) return typeError(path, "a mapping", v);
  for (const auto& [key, value] : v.items()) {
    std::string s;
    if (auto r = readString(value, join(path, key), s); !r) return r;
    out[key] = std::move(s);
  }
  return {};
}

// One field of a struct: its wire name and how to read it.
struct Field {
  std::string_view name;
  std::function<Result<void>(const Json&, const Path&)> read;
};

// Go's encoding/json: a key picks the field with exactly its name, else the first field whose
// name equals it ignoring case; keys that pick no field are ignored.
const Field* findField(std::span<const Field> fields, std::string_view key) {
  for (const Field& f : fields) {
    if (f.name == key) return &f;
  }
  for (const Field& f : fields) {
    if (equalsIgnoreCase(f.name, key)) return &f;
  }
  return nullptr;
}

Result<void> readObject(const Json& v, const Path& path, std::span<const Field> fields) {
  if (v.is_null()) return {};
  if (!v.is_object()) return typeError(path.empty() ? "config" : path, "a mapping", v);
  for (const auto& [key, value] : v.items()) {
    const Field* field = findField(fields, key);
    if (field == nullptr) continue;
    if (auto r = field->read(value, join(path, field->name)); !r) return r;
  }
  return {};
}

template <class T, class Read>
Result<void> readList(const Json& v, const Path& path, std::vector<T>& out, Read read) {
  if (v.is_null()) return {};
  if (!v.is_array()) return typeError(path, "a list", v);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    T item;
    if (auto r = read(v[i], index(path, i), item); !r) return r;
    out.push_back(std::move(item));
  }
  return {};
}

// Binds a reader to a member: field("name", readString, x.name).
template <class T, class Read>
Field field(std::string_view name, Read read, T& member) {
  return {name, [read, &member](const Json& v, const Path& p) { return read(v, p, member); }};
}

Result<void> readLicense(const Json& v, const Path& path, std::optional<LicenseConfig>& out) {
  if (v.is_null()) return {};
  LicenseConfig license;
  const Field fields[] = {field("key", readString, license.key),
                          field("hmac", readString, license.hmac)};
  if (auto r = readObject(v, path, fields); !r) return r;
  out = std::move(license);
  return {};
}

Result<void> readLimits(const Json& v, const Path& path, std::optional<Limits>& out) {
  if (v.is_null()) return {};
  Limits limits;
  const Field fields[] = {
      field("max_allocations", readInt, limits.max_allocations),
      field("allocation_kbps", readInt, limits.allocation_kbps),
      field("listener_kbps", readInt, limits.listener_kbps),
      field("auth_failures", readInt, limits.auth_failures),
      field("auth_failure_window", readInt, limits.auth_failure_window),
      field("nonce_lifetime", readInt, limits.nonce_lifetime),
      field("max_connections", readInt, limits.max_connections),
      field("idle_timeout", readInt, limits.idle_timeout),
      field("handshake_timeout", readInt, limits.handshake_timeout),
      field("source_quota", readInt, limits.source_quota),
      field("max_permissions", readInt, limits.max_permissions),
      field("max_channels", readInt, limits.max_channels),
      field("block_seconds", readInt, limits.block_seconds),
      field("trusted_networks", readStringList, limits.trusted_networks),
  };
  if (auto r = readObject(v, path, fields); !r) return r;
  out = limits;
  return {};
}

Result<void> readCapacity(const Json& v, const Path& path, std::optional<Capacity>& out) {
  if (v.is_null()) return {};
  Capacity capacity;
  const Field fields[] = {
      field("allocations", readInt, capacity.allocations),
      field("relay_kbps", readInt, capacity.relay_kbps),
      field("cpu_percent", readInt, capacity.cpu_percent),
      field("resume_percent", readInt, capacity.resume_percent),
  };
  if (auto r = readObject(v, path, fields); !r) return r;
  out = capacity;
  return {};
}

Result<void> readAdmin(const Json& v, const Path& path, Admin& a) {
  const Field fields[] = {
      field("name", readString, a.name),
      field("loglevel", readString, a.loglevel),
      field("metrics_endpoint", readString, a.metrics_endpoint),
      field("healthcheck_endpoint", readOptionalString, a.healthcheck_endpoint),
      field("user_quota", readInt, a.user_quota),
      field("offload_engine", readString, a.offload_engine),
      field("offload_interfaces", readStringList, a.offload_interfaces),
      field("license_config", readLicense, a.license_config),
      field("limits", readLimits, a.limits),
      field("capacity", readCapacity, a.capacity),
      field("region", readString, a.region),
      field("mobility", readBool, a.mobility),
  };
  return readObject(v, path, fields);
}

Result<void> readAuth(const Json& v, const Path& path, Auth& a) {
  const Field fields[] = {
      field("type", readString, a.type),
      field("realm", readString, a.realm),
      field("credentials", readStringMap, a.credentials),
      field("oauth_server_name", readString, a.oauth_server_name),
      field("oauth_keys", readStringList, a.oauth_keys),
  };
  return readObject(v, path, fields);
}

Result<void> readListener(const Json& v, const Path& path, Listener& l) {
  const Field fields[] = {
      field("name", readString, l.name),
      field("protocol", readString, l.protocol),
      field("public_address", readString, l.public_address),
      field("public_port", readInt, l.public_port),
      field("address", readString, l.address),
      field("port", readInt, l.port),
      field("bind_address", readString, l.bind_address),
      field("min_relay_port", readInt, l.min_relay_port),
      field("max_relay_port", readInt, l.max_relay_port),
      field("cert", readString, l.cert),
      field("key", readString, l.key),
      field("routes", readStringList, l.routes),
      field("alternate_servers", readStringList, l.alternate_servers),
      field("alternate_domain", readString, l.alternate_domain),
  };
  return readObject(v, path, fields);
}

Result<void> readCluster(const Json& v, const Path& path, Cluster& c) {
  const Field fields[] = {
      field("name", readString, c.name),
      field("type", readString, c.type),
      field("protocol", readString, c.protocol),
      field("endpoints", readStringList, c.endpoints),
  };
  return readObject(v, path, fields);
}

Result<void> readListeners(const Json& v, const Path& path, std::vector<Listener>& out) {
  return readList(v, path, out, readListener);
}

Result<void> readClusters(const Json& v, const Path& path, std::vector<Cluster>& out) {
  return readList(v, path, out, readCluster);
}

}  // namespace

Result<StunnerConfig> decodeStunnerConfig(const Json& root) {
  if (!root.is_object()) return typeError("config", "a mapping", root);
  StunnerConfig c;
  const Field fields[] = {
      field("version", readString, c.version),
      field("admin", readAdmin, c.admin),
      field("auth", readAuth, c.auth),
      field("listeners", readListeners, c.listeners),
      field("clusters", readClusters, c.clusters),
  };
  if (auto r = readObject(root, "", fields); !r) return r.error();
  return c;
}

std::map<std::string, std::string> decodeRawCredentials(const Json& root) {
  std::map<std::string, std::string> out;
  if (!root.is_object()) return out;
  Auth auth;
  const Field auth_field[] = {{"auth", [&auth](const Json& v, const Path& p) {
                                 // Only credentials matter; a bad type elsewhere in auth (say, an
                                 // unexpanded "$VAR" where a number goes) must not hide them.
                                 if (!v.is_object()) return Result<void>();
                                 for (const auto& [key, value] : v.items()) {
                                   if (equalsIgnoreCase(key, "credentials")) {
                                     auth.credentials.clear();
                                     (void)readStringMap(value, p, auth.credentials);
                                   }
                                 }
                                 return Result<void>();
                               }}};
  (void)readObject(root, "", auth_field);
  return auth.credentials;
}

}  // namespace kturn::config
