// Which peers the current config lets an allocation reach: the allow-list built from the routes'
// backend endpoints (docs/security.md, "Who may be a peer"), per listener. Every relayed packet is
// checked, so an answer is cached in the permission or channel it is for (PolicyVerdict) and holds
// for one config epoch: per packet, one integer compare until the config changes. Epochs are per
// core.
#pragma once

#include <cstdint>

#include "kturn/transport_address.h"
#include "turn/allocation.h"
#include "turn/ids.h"
#include "turn/server_config.h"

namespace kturn::turn {

class PeerPolicy {
 public:
  // `config` must outlive its use here: until the next apply().
  explicit PeerPolicy(const ServerConfig& config) : config_(&config) {}

  // A new config: every cached verdict is stale from now on.
  void apply(const ServerConfig& config) {
    config_ = &config;
    ++epoch_;
  }
  // An allocation moved here from another core (RFC 8016): its verdicts are of that core's
  // epochs, so every peer is checked again.
  static void forgetVerdicts(Allocation& allocation);

  // `peer` exactly: a channel, a Connect. Also yields the admitting endpoint's cluster in
  // `verdict`.
  bool admits(ListenerId listener, PolicyVerdict& verdict, const TransportAddress& peer);
  // Some port of `ip`: a permission of a UDP allocation.
  bool admitsIp(ListenerId listener, PolicyVerdict& verdict, const IpAddress& ip);
  // A datagram through `permission` to or from `peer`, with the admitting endpoint's cluster. The
  // verdict cached in the permission is for IPs every port of which is admitted; a
  // port-restricted endpoint is checked per packet.
  bool admitsPacket(ListenerId listener, Permission& permission, const TransportAddress& peer,
                    ClusterId& cluster);
  // RFC 6062: the endpoint of a TCP cluster of the listener admitting `peer` (with `ip_only`,
  // some port of its IP), or null. Not cached: called per connection, never per packet.
  const PeerRange* admittingTcp(ListenerId listener, const TransportAddress& peer,
                                bool ip_only = false) const;

 private:
  const ServerConfig* config_;
  uint64_t epoch_ = 1;
};

}  // namespace kturn::turn
