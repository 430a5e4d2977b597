#include "auth/region_policy.h"

#include <algorithm>

namespace kturn::auth {

Result<RegionPolicy::Network> RegionPolicy::parseNetwork(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq + 1 == text.size()) {
    return makeError(Error::Code::kInvalidArgument,
                     "want <IP>[/<prefix>]=<region>, got \"" + std::string(text) + "\"");
  }
  auto network = config::parseEndpoint(text.substr(0, eq));
  if (!network || network->has_port_range) {
    return makeError(Error::Code::kInvalidArgument,
                     "\"" + std::string(text.substr(0, eq)) + "\": not an IP[/prefix]");
  }
  return Network{*network, std::string(text.substr(eq + 1))};
}

std::optional<std::string> RegionPolicy::wanted(const std::optional<std::string>& region,
                                                const std::optional<std::string>& client) const {
  if (region && !region->empty()) return region;
  if (!client) return std::nullopt;
  const auto ip = IpAddress::parse(*client);
  if (!ip) return std::nullopt;
  for (const Network& n : networks_) {
    if (n.network.containsAddress(*ip)) return n.region;
  }
  return std::nullopt;
}

size_t RegionPolicy::rank(std::string_view region, const std::optional<std::string>& wanted) const {
  if (region.empty()) return order_.size() + 2;
  if (wanted && region == *wanted) return 0;
  const auto it = std::find(order_.begin(), order_.end(), region);
  return it != order_.end() ? 1 + static_cast<size_t>(it - order_.begin()) : order_.size() + 1;
}

}  // namespace kturn::auth
