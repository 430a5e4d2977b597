#include "config/default_config.h"

#include <cassert>

#include "config/base64.h"
#include "config/defaults.h"
#include "config/self_signed_cert.h"
#include "config/turn_uri.h"
#include "config/validator.h"

namespace kturn::config {

StunnerConfig makeDefaultConfig(std::string secret) {
  StunnerConfig c{
      .version = std::string(kApiVersion),
      // Health checks and /status on loopback only: the embedded default is for one machine,
      // and /status describes the server (docs/security.md). Metrics stay off, as in STUNner.
      .admin = {.name = "kturnd", .healthcheck_endpoint = "http://127.0.0.1:8086"},
      .auth = {.type = "ephemeral",
               .realm = std::string(kDefaultRealm),
               .credentials = {{"secret", std::move(secret)}}},
      .listeners = {{.name = "default-listener",
                     .protocol = "TURN-UDP",
                     .address = "127.0.0.1",
                     .port = kDefaultPort,
                     .routes = {"default-cluster"}}},
      .clusters = {{.name = "default-cluster",
                    .type = "STATIC",
                    .protocol = "UDP",
                    .endpoints = {"127.0.0.0/8", "::1/128"}}},
  };
  [[maybe_unused]] const auto valid = validate(c);  // fills the remaining defaults
  assert(valid.has_value());
  return c;
}

Result<StunnerConfig> configFromTurnUri(std::string_view uri) {
  auto parsed = parseTurnUri(uri);
  if (!parsed) return parsed.error();
  if (parsed->username.empty() || parsed->password.empty()) {
    return makeError(Error::Code::kInvalidArgument,
                     "TURN URI " + std::string(uri) + ": username and password must be set");
  }
  if (!IpAddress::parse(parsed->host)) {
    return makeError(Error::Code::kInvalidArgument,
                     "TURN URI " + std::string(uri) + ": host must be an IP address");
  }

  StunnerConfig c{
      .version = std::string(kApiVersion),
      .admin = {.loglevel = std::string(kDefaultLogLevel),
                .healthcheck_endpoint = std::string(kDefaultHealthCheckEndpoint)},
      .auth = {.type = "static",
               .realm = std::string(kDefaultRealm),
               .credentials = {{"username", parsed->username}, {"password", parsed->password}}},
      .listeners = {{.name = "default-listener",
                     .protocol = std::string(toString(parsed->protocol)),
                     .address = parsed->host,
                     .port = parsed->port,
                     .routes = {"allow-any"}}},
      .clusters = {{.name = "allow-any", .type = "STATIC", .endpoints = {"0.0.0.0/0"}}},
  };
  if (needsCertificate(parsed->protocol)) {
    auto pem = generateSelfSignedCert();
    if (!pem) return pem.error();
    c.listeners[0].cert = encodeBase64(pem->cert_pem);
    c.listeners[0].key = encodeBase64(pem->key_pem);
  }
  if (auto valid = validate(c); !valid) return valid.error();
  return c;
}

}  // namespace kturn::config
