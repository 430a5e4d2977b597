#include "operator/auth_renderer.h"

#include "config/defaults.h"

namespace kturn::op {
namespace {

Error invalid(const k8s::GatewayConfig& gc, std::string message) {
  return makeError(Error::Code::kInvalidArgument,
                   "GatewayConfig " + gc.meta.key().str() + ": " + std::move(message));
}

// STUNner's getAuthType: "static"/"plaintext" and "ephemeral"/"timewindowed"/"longterm", plus
// "none"; case-sensitive like STUNner. The default is static.
std::optional<config::AuthType> parseType(const std::optional<std::string>& text) {
  const std::string t = text.value_or(std::string(config::kDefaultAuthType));
  if (t == "static" || t == "plaintext") return config::AuthType::kStatic;
  if (t == "ephemeral" || t == "timewindowed" || t == "longterm") {
    return config::AuthType::kEphemeral;
  }
  if (t == "none") return config::AuthType::kNone;
  return std::nullopt;
}

config::Auth baseAuth(const k8s::GatewayConfig& gc, config::AuthType type) {
  config::Auth auth;
  auth.type = std::string(config::toString(type));
  auth.realm = gc.realm.value_or(std::string(config::kDefaultRealm));
  return auth;
}

Result<config::Auth> inlineAuth(const k8s::GatewayConfig& gc) {
  auto type = parseType(gc.authType);
  if (!type) {
    return invalid(gc, "spec.authType \"" + gc.authType.value_or("") +
                           "\": must be static or ephemeral (or plaintext, longterm, none)");
  }
  config::Auth auth = baseAuth(gc, *type);
  if (*type == config::AuthType::kStatic) {
    if (!gc.userName || !gc.password) {
      return invalid(gc, "spec.userName and spec.password: required for static auth");
    }
    auth.credentials["username"] = *gc.userName;
    auth.credentials["password"] = *gc.password;
  } else if (*type == config::AuthType::kEphemeral) {
    if (!gc.sharedSecret) return invalid(gc, "spec.sharedSecret: required for ephemeral auth");
    auth.credentials["secret"] = *gc.sharedSecret;
  }
  return auth;
}

Result<config::Auth> secretAuth(const k8s::GatewayConfig& gc, const ClusterSnapshot& snapshot) {
  const k8s::SecretObjectReference& ref = *gc.authRef;
  if (ref.group && !ref.group->empty() && *ref.group != "v1") {
    return invalid(gc, "spec.authRef.group \"" + *ref.group + "\": must be empty (core)");
  }
  if (ref.kind && *ref.kind != "Secret") {
    return invalid(gc, "spec.authRef.kind \"" + *ref.kind + "\": must be Secret");
  }
  const k8s::ObjectKey key{ref.ns.value_or(gc.meta.ns), ref.name};
  const k8s::Secret* secret = snapshot.findSecret(key);
  if (secret == nullptr) return invalid(gc, "spec.authRef: Secret " + key.str() + " not found");
  auto type = parseType(secret->get("type"));
  if (!type) {
    return invalid(gc, "Secret " + key.str() + " key type \"" + secret->get("type").value_or("") +
                           "\": must be static or ephemeral");
  }
  config::Auth auth = baseAuth(gc, *type);
  if (*type == config::AuthType::kStatic) {
    auto username = secret->get("username");
    auto password = secret->get("password");
    if (!username || !password) {
      return invalid(gc, "Secret " + key.str() +
                             ": keys username and password required for "
                             "static auth");
    }
    auth.credentials["username"] = *username;
    auth.credentials["password"] = *password;
  } else if (*type == config::AuthType::kEphemeral) {
    auto shared = secret->get("secret");
    if (!shared) shared = secret->get("sharedSecret");  // STUNner accepts the long form
    if (!shared) {
      return invalid(gc, "Secret " + key.str() + ": key secret required for ephemeral auth");
    }
    auth.credentials["secret"] = *shared;
  }
  return auth;
}

}  // namespace

Result<config::Auth> renderAuth(const k8s::GatewayConfig& gatewayConfig,
                                const ClusterSnapshot& snapshot) {
  if (gatewayConfig.authRef) return secretAuth(gatewayConfig, snapshot);
  return inlineAuth(gatewayConfig);
}

}  // namespace kturn::op
