#include "cds/protocol.h"

#include <nlohmann/json.hpp>

#include "cds/url_util.h"
#include "config/defaults.h"
#include "config/parser.h"
#include "config/serializer.h"
#include "config/validator.h"

namespace kturn::cds {

Result<ConfigId> parseConfigId(std::string_view id) {
  const size_t slash = id.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == id.size() ||
      id.find('/', slash + 1) != std::string_view::npos) {
    return makeError(Error::Code::kInvalidArgument,
                     "invalid id \"" + std::string(id) + "\": want <namespace>/<name>");
  }
  return ConfigId{std::string(id.substr(0, slash)), std::string(id.substr(slash + 1))};
}

std::string namespacePath(std::string_view namespace_) {
  return std::string(kAllConfigsPath) + "/" + percentEncode(namespace_);
}

std::string configPath(const ConfigId& id) {
  return namespacePath(id.namespace_) + "/" + percentEncode(id.name);
}

config::StunnerConfig zeroConfig(std::string_view admin_name) {
  config::StunnerConfig zero{
      .version = "v1",
      .admin = {.name = std::string(admin_name)},
      .auth = {.type = "static",
               .realm = "stunner.l7mp.io",
               .credentials = {{"username", "dummy-username"}, {"password", "dummy-password"}}},
  };
  // Cannot fail: no listeners, no clusters, known auth type with both credentials.
  (void)config::validate(zero);
  return zero;
}

bool isConfigDeleted(const config::StunnerConfig& config) {
  return config == zeroConfig(config.admin.name);
}

Result<config::StunnerConfig> parseServedConfig(std::string_view text, bool expand_env) {
  if (expand_env) return config::parseConfig(text);
  Result<config::StunnerConfig> decoded = config::decodeConfig(text);
  if (!decoded) return decoded;
  if (auto valid = config::validate(*decoded); !valid) return valid.error();
  return decoded;
}

std::string toListJson(const std::vector<const config::StunnerConfig*>& items) {
  std::string out = R"({"version":"v1","items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += config::toJson(*items[i]);
  }
  out += "]}\n";
  return out;
}

Result<std::vector<config::StunnerConfig>> parseListJson(std::string_view text, bool expand_env) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return makeError(Error::Code::kMalformed, "config list: not a JSON object");
  }
  const auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return std::vector<config::StunnerConfig>{};
  if (!items->is_array()) return makeError(Error::Code::kMalformed, "items: not a list");
  std::vector<config::StunnerConfig> out;
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    Result<config::StunnerConfig> parsed = parseServedConfig((*items)[i].dump(), expand_env);
    if (!parsed) {
      return makeError(parsed.error().code,
                       "items[" + std::to_string(i) + "]." + parsed.error().message);
    }
    out.push_back(std::move(parsed).value());
  }
  return out;
}

Result<std::vector<std::string>> parseListIds(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return makeError(Error::Code::kMalformed, "config list: not a JSON object");
  }
  std::vector<std::string> ids;
  const auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return ids;
  if (!items->is_array()) return makeError(Error::Code::kMalformed, "items: not a list");
  for (size_t i = 0; i < items->size(); ++i) {
    const nlohmann::json& item = (*items)[i];
    if (!item.is_object()) {
      return makeError(Error::Code::kMalformed,
                       "items[" + std::to_string(i) + "]: not a JSON object");
    }
    std::string id;
    if (const auto admin = item.find("admin"); admin != item.end() && admin->is_object()) {
      if (const auto name = admin->find("name"); name != admin->end() && name->is_string()) {
        id = name->get<std::string>();
      }
    }
    ids.push_back(id.empty() ? std::string(config::kDefaultStunnerName) : std::move(id));
  }
  return ids;
}

}  // namespace kturn::cds
