#include "operator/config_publisher.h"

#include <map>

#include "config/validator.h"

namespace kturn::op {

ConfigPublisher::Outcome ConfigPublisher::publish(const std::vector<GatewayOutput>& gateways) {
  Outcome outcome;
  std::map<std::string, config::StunnerConfig> configs;
  for (const GatewayOutput& gw : gateways) {
    if (!gw.config) continue;
    const std::string id = gw.gateway.str();
    config::StunnerConfig candidate = *gw.config;
    Result<void> valid = config::validate(candidate);
    if (valid) {
      configs.emplace(id, std::move(candidate));
      continue;
    }
    ++outcome.rejected;
    outcome.problems.push_back("Gateway " + id + ": rendered config rejected (" +
                               valid.error().message + "); the dataplane keeps its previous one");
    if (std::optional<config::StunnerConfig> previous = server_.get(id)) {
      configs.emplace(id, std::move(*previous));
    }
  }
  outcome.served = static_cast<int>(configs.size());
  if (Result<void> updated = server_.update(configs); !updated) {
    // Cannot happen (every entry was validated above); reported rather than hidden.
    outcome.problems.push_back("CDS update: " + updated.error().message);
  }
  return outcome;
}

}  // namespace kturn::op
