#include "operator/config_publisher.h"

#include <chrono>
#include <map>
#include <optional>
#include <string_view>

#include "config/validator.h"

namespace kturn::op {
namespace {

constexpr std::string_view kPreviousSecret = "previous_secret";
constexpr std::string_view kPreviousSecretExpiry = "previous_secret_expiry";

// Adds the overlap of a secret rotation to `next` (see the header), given what the Gateway's
// dataplanes were served before.
void carryPreviousSecret(config::StunnerConfig& next, const config::StunnerConfig* served,
                         std::chrono::seconds lifetime, int64_t now_unix) {
  config::Auth& auth = next.auth;
  if (auth.authType() != config::AuthType::kEphemeral || !auth.secret()) return;
  if (auth.previousSecret()) return;  // written by hand in the GatewayConfig: theirs to manage
  if (served == nullptr || served->auth.authType() != config::AuthType::kEphemeral) return;
  const std::string secret(*auth.secret());
  const auto servedSecret = served->auth.secret();
  if (servedSecret && *servedSecret != secret) {
    auth.credentials[std::string(kPreviousSecret)] = std::string(*servedSecret);
    auth.credentials[std::string(kPreviousSecretExpiry)] =
        std::to_string(now_unix + lifetime.count());
    return;
  }
  const auto previous = served->auth.previousSecret();
  const auto expiry = served->auth.previousSecretExpiry();
  if (previous && expiry && *expiry > now_unix && *previous != secret) {
    auth.credentials[std::string(kPreviousSecret)] = std::string(*previous);
    auth.credentials[std::string(kPreviousSecretExpiry)] = std::to_string(*expiry);
  }
}

}  // namespace

std::optional<config::StunnerConfig> ConfigPublisher::candidate(const GatewayOutput& gw,
                                                                int64_t now_unix,
                                                                Outcome& outcome) {
  const std::string id = gw.gateway.str();
  config::StunnerConfig candidate = *gw.config;
  std::optional<config::StunnerConfig> served = server_.get(id);
  carryPreviousSecret(candidate, served ? &*served : nullptr, gw.credential_lifetime, now_unix);
  Result<void> valid = config::validate(candidate);
  if (valid) return candidate;
  ++outcome.rejected;
  outcome.problems.push_back("Gateway " + id + ": rendered config rejected (" +
                             valid.error().message + "); the dataplane keeps its previous one");
  return std::nullopt;
}

ConfigPublisher::Outcome ConfigPublisher::publish(const std::vector<GatewayOutput>& gateways,
                                                  int64_t now_unix) {
  Outcome outcome;
  std::map<std::string, config::StunnerConfig> configs;
  open_.clear();
  for (const GatewayOutput& gw : gateways) {
    if (!gw.config) continue;
    const std::string id = gw.gateway.str();
    if (gw.cds_open) open_.insert(id);
    if (std::optional<config::StunnerConfig> next = candidate(gw, now_unix, outcome)) {
      configs.emplace(id, std::move(*next));
    } else if (std::optional<config::StunnerConfig> served = server_.get(id)) {
      configs.emplace(id, std::move(*served));
    }
  }
  outcome.served = static_cast<int>(configs.size());
  // Opened before the configs appear, closed before they change: a stunnerd never sees a 401
  // for a config it may read, and a config that stops being open is never served openly again.
  server_.setOpen({open_.begin(), open_.end()});
  if (Result<void> updated = server_.update(configs); !updated) {
    // Cannot happen (every entry was validated above); reported rather than hidden.
    outcome.problems.push_back("CDS update: " + updated.error().message);
  }
  return outcome;
}

ConfigPublisher::Outcome ConfigPublisher::publishChanges(const std::vector<GatewayOutput>& changed,
                                                         const std::vector<k8s::ObjectKey>& removed,
                                                         int64_t now_unix) {
  Outcome outcome;
  std::set<std::string> open = open_;
  for (const GatewayOutput& gw : changed) {
    if (gw.config && gw.cds_open) {
      open.insert(gw.gateway.str());
    } else {
      open.erase(gw.gateway.str());
    }
  }
  for (const k8s::ObjectKey& gateway : removed) open.erase(gateway.str());
  if (open != open_) {  // as in publish(): before the configs change
    open_ = std::move(open);
    server_.setOpen({open_.begin(), open_.end()});
  }
  for (const GatewayOutput& gw : changed) {
    const std::string id = gw.gateway.str();
    if (!gw.config) {
      server_.remove(id);
      continue;
    }
    std::optional<config::StunnerConfig> next = candidate(gw, now_unix, outcome);
    if (!next) continue;  // the previous config stays
    if (Result<void> stored = server_.upsert(id, std::move(*next)); !stored) {
      outcome.problems.push_back("CDS upsert " + id + ": " + stored.error().message);
    }
  }
  for (const k8s::ObjectKey& gateway : removed) server_.remove(gateway.str());
  outcome.served = static_cast<int>(server_.ids().size());
  return outcome;
}

}  // namespace kturn::op
