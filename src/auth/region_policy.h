// RegionPolicy: which region's relays kturn-auth names first (docs/operations.md#many-regions).
// A request says its region with the `region` query parameter, or gives the client's address
// with `client` (the signalling server knows it; kturn-auth only sees the signalling server),
// which the configured client networks map to a region. The ICE servers then come in the order
// of rank(): the wanted region's gateways first, then the other regions in the configured
// order of preference, then those of regions not listed, then those without a region; within a
// rank in id order, as without regions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/endpoint.h"
#include "kturn/result.h"

namespace kturn::auth {

class RegionPolicy {
 public:
  struct Network {
    config::Endpoint network;  // an IP prefix, no port range
    std::string region;
  };
  // "10.0.0.0/8=eu-central" (or an IPv6 prefix); the error says what is wrong.
  static Result<Network> parseNetwork(std::string_view text);

  RegionPolicy() = default;
  // `networks`: client networks, the first that holds the client wins; `order`: the regions in
  // order of preference for a request whose region has no gateway, or that names none.
  RegionPolicy(std::vector<Network> networks, std::vector<std::string> order)
      : networks_(std::move(networks)), order_(std::move(order)) {}

  // The region a request wants: `region` if given, else the region of the first network that
  // holds `client` (an IP address), else none.
  std::optional<std::string> wanted(const std::optional<std::string>& region,
                                    const std::optional<std::string>& client) const;
  // Lower first: 0 for `wanted`, 1 + i for order[i], then any other region, then none.
  size_t rank(std::string_view region, const std::optional<std::string>& wanted) const;

 private:
  std::vector<Network> networks_;
  std::vector<std::string> order_;
};

}  // namespace kturn::auth
