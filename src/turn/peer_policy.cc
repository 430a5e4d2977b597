#include "turn/peer_policy.h"

namespace kturn::turn {

void PeerPolicy::forgetVerdicts(Allocation& allocation) {
  for (Permission& p : allocation.permissions) p.ip_verdict = p.any_port_verdict = {};
  for (ChannelBinding& c : allocation.channels) c.verdict = {};
}

bool PeerPolicy::admits(ListenerId listener, PolicyVerdict& verdict, const TransportAddress& peer) {
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(listener);
    const PeerRange* range = policy != nullptr ? policy->admitting(peer) : nullptr;
    verdict = {epoch_, range != nullptr, range != nullptr ? range->cluster : ClusterId{0}};
  }
  return verdict.allowed;
}

bool PeerPolicy::admitsIp(ListenerId listener, PolicyVerdict& verdict, const IpAddress& ip) {
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(listener);
    verdict = {epoch_, policy != nullptr && policy->allowsIp(ip)};
  }
  return verdict.allowed;
}

bool PeerPolicy::admitsPacket(ListenerId listener, Permission& permission,
                              const TransportAddress& peer, ClusterId& cluster) {
  PolicyVerdict& verdict = permission.any_port_verdict;
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(listener);
    const PeerRange* range = policy != nullptr ? policy->admittingAllPorts(peer.ip) : nullptr;
    verdict = {epoch_, range != nullptr, range != nullptr ? range->cluster : ClusterId{0}};
  }
  if (verdict.allowed) {
    cluster = verdict.cluster;
    return true;
  }
  // Port-restricted endpoints: check this packet's port (a short scan of the listener's routes).
  const ListenerPolicy* policy = config_->listener(listener);
  const PeerRange* range = policy != nullptr ? policy->admitting(peer) : nullptr;
  if (range == nullptr) return false;
  cluster = range->cluster;
  return true;
}

const PeerRange* PeerPolicy::admittingTcp(ListenerId listener, const TransportAddress& peer,
                                          bool ip_only) const {
  const ListenerPolicy* policy = config_->listener(listener);
  return policy != nullptr ? policy->admittingTcp(peer, ip_only) : nullptr;
}

}  // namespace kturn::turn
