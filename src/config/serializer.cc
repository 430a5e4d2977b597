#include "config/serializer.h"

#include <yaml-cpp/yaml.h>

#include "config/document.h"

namespace kturn::config {
namespace {

// Go's omitempty: "", 0 and empty lists are left out.
void putString(Json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}
void putInt(Json& out, const char* key, int value) {
  if (value != 0) out[key] = value;
}
void putList(Json& out, const char* key, const std::vector<std::string>& values) {
  if (!values.empty()) out[key] = values;
}

Json adminJson(const Admin& a) {
  Json out = Json::object();
  putString(out, "name", a.name);
  putString(out, "loglevel", a.loglevel);
  putString(out, "metrics_endpoint", a.metrics_endpoint);
  // A pointer in stunnerd: written whenever set, even when empty (that means "disabled").
  if (a.healthcheck_endpoint) out["healthcheck_endpoint"] = *a.healthcheck_endpoint;
  putInt(out, "user_quota", a.user_quota);
  putString(out, "offload_engine", a.offload_engine);
  putList(out, "offload_interfaces", a.offload_interfaces);
  if (a.license_config) {
    out["license_config"] = Json{{"key", a.license_config->key}, {"hmac", a.license_config->hmac}};
  }
  if (a.limits) {  // every field, so that a zero ("unlimited") survives the round trip
    const Limits& l = *a.limits;
    out["limits"] = Json{{"max_allocations", l.max_allocations},
                         {"allocation_kbps", l.allocation_kbps},
                         {"listener_kbps", l.listener_kbps},
                         {"auth_failures", l.auth_failures},
                         {"auth_failure_window", l.auth_failure_window},
                         {"nonce_lifetime", l.nonce_lifetime},
                         {"max_connections", l.max_connections},
                         {"idle_timeout", l.idle_timeout},
                         {"handshake_timeout", l.handshake_timeout},
                         {"source_quota", l.source_quota},
                         {"max_permissions", l.max_permissions},
                         {"max_channels", l.max_channels},
                         {"block_seconds", l.block_seconds},
                         {"trusted_networks", l.trusted_networks}};
  }
  if (a.capacity) {
    const Capacity& c = *a.capacity;
    out["capacity"] = Json{{"allocations", c.allocations},
                           {"relay_kbps", c.relay_kbps},
                           {"cpu_percent", c.cpu_percent},
                           {"resume_percent", c.resume_percent}};
  }
  putString(out, "region", a.region);
  if (a.mobility) out["mobility"] = true;
  return out;
}

Json authJson(const Auth& a) {
  Json out = Json::object();
  putString(out, "type", a.type);
  putString(out, "realm", a.realm);
  Json credentials = Json::object();  // no omitempty in stunnerd
  for (const auto& [k, v] : a.credentials) credentials[k] = v;
  out["credentials"] = std::move(credentials);
  putString(out, "oauth_server_name", a.oauth_server_name);
  putList(out, "oauth_keys", a.oauth_keys);
  return out;
}

Json listenerJson(const Listener& l) {
  Json out = Json::object();
  putString(out, "name", l.name);
  putString(out, "protocol", l.protocol);
  putString(out, "public_address", l.public_address);
  putInt(out, "public_port", l.public_port);
  putString(out, "address", l.address);
  putInt(out, "port", l.port);
  putString(out, "bind_address", l.bind_address);
  putInt(out, "min_relay_port", l.min_relay_port);
  putInt(out, "max_relay_port", l.max_relay_port);
  putString(out, "cert", l.cert);
  putString(out, "key", l.key);
  putList(out, "routes", l.routes);
  putList(out, "alternate_servers", l.alternate_servers);
  putString(out, "alternate_domain", l.alternate_domain);
  return out;
}

Json clusterJson(const Cluster& c) {
  Json out = Json::object();
  out["name"] = c.name;  // no omitempty in stunnerd
  putString(out, "type", c.type);
  putString(out, "protocol", c.protocol);
  putList(out, "endpoints", c.endpoints);
  return out;
}

Json configJson(const StunnerConfig& c) {
  Json out = Json::object();
  out["version"] = c.version;
  // `admin` is a struct with omitempty in stunnerd, which Go never omits.
  out["admin"] = adminJson(c.admin);
  out["auth"] = authJson(c.auth);
  if (!c.listeners.empty()) {
    Json& list = out["listeners"] = Json::array();
    for (const Listener& l : c.listeners) list.push_back(listenerJson(l));
  }
  if (!c.clusters.empty()) {
    Json& list = out["clusters"] = Json::array();
    for (const Cluster& cl : c.clusters) list.push_back(clusterJson(cl));
  }
  return out;
}

void emit(YAML::Emitter& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        out << YAML::Key << k << YAML::Value;
        emit(out, item);
      }
      out << YAML::EndMap;
      break;
    case Json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      break;
    case Json::value_t::string:
      out << YAML::DoubleQuoted << v.get<std::string>();
      break;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      out << v.get<int64_t>();
      break;
    default:
      out << YAML::Null;
      break;
  }
}

}  // namespace

std::string toJson(const StunnerConfig& config, int indent) {
  // Replacing invalid UTF-8 rather than throwing: a config is text the user wrote, and a dump
  // must never take the process down.
  return configJson(config).dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string toYaml(const StunnerConfig& config) {
  YAML::Emitter out;
  emit(out, configJson(config));
  std::string text = out.c_str();
  text.push_back('\n');
  return text;
}

}  // namespace kturn::config
