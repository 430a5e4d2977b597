// ChannelBind (RFC 8656 §11.2). Binding a channel also installs or refreshes the permission for
// the peer's IP.
#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleChannelBind(Request& req) {
  ++req.stats.requests_channel_bind;
  Allocation* a = allocations_.find(req.five_tuple);
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);
  // A TCP allocation's peers are reached over their own connections (RFC 6062): no channels.
  if (a->relay_protocol != TransportProtocol::kUdp) {
    return respondError(req, stun::error::kForbidden);
  }

  const auto number_attr = req.message.value(stun::attr::kChannelNumber);
  const auto peer_attr = req.message.value(stun::attr::kXorPeerAddress);
  // 0 is outside the channel range, so a missing or malformed CHANNEL-NUMBER fails the check.
  const uint16_t channel_number =
      number_attr ? stun::decodeChannelNumber(*number_attr).value_or(0) : 0;
  const auto peer =
      peer_attr ? stun::decodeXorAddress(*peer_attr, req.message.xorPad()) : std::nullopt;
  if (!stun::isValidChannelNumber(channel_number) || !peer) {
    return respondError(req, stun::error::kBadRequest);
  }
  if (!a->relays(peer->family())) {
    return respondError(req, stun::error::kPeerAddressFamilyMismatch);
  }
  ChannelBinding* by_number = a->findChannel(channel_number);
  ChannelBinding* by_peer = a->findChannel(*peer);
  // A channel is bound to one peer and a peer to one channel, for the binding's life.
  if (by_number != by_peer) return respondError(req, stun::error::kBadRequest);

  PolicyVerdict verdict;
  if (!policy_.admits(a->listener, verdict, *peer)) {
    ++req.stats.permission_denied;
    return respondError(req, stun::error::kForbidden);
  }

  // A binding or permission this request would add, beyond the allocation's limits, is refused
  // with 508 before anything is installed; rebinding (a refresh) always passes.
  const MonoTime now = req.now.mono;
  if ((by_number == nullptr || by_number->expires <= now) &&
      a->activeChannels(now) >= config_->max_channels_per_allocation) {
    ++req.stats.channels_rejected_capacity;
    return respondError(req, stun::error::kInsufficientCapacity);
  }
  const Permission* permission = a->findPermission(peer->ip);
  if ((permission == nullptr || permission->expires <= now) &&
      a->activePermissions(now) >= config_->max_permissions_per_allocation) {
    ++req.stats.permissions_rejected_capacity;
    return respondError(req, stun::error::kInsufficientCapacity);
  }

  const MonoTime channel_expires = req.now.mono + config_->lifetimes.channel;
  ChannelBinding* channel = by_number;
  if (channel != nullptr) {
    channel->expires = channel_expires;
  } else {
    channel =
        &a->channels.emplace_back(ChannelBinding{channel_number, *peer, channel_expires, verdict});
  }
  const MonoTime permission_expires = req.now.mono + config_->lifetimes.permission;
  if (Permission* p = a->findPermission(peer->ip)) {
    p->expires = std::max(p->expires, permission_expires);
  } else {
    a->permissions.push_back(Permission{peer->ip, permission_expires, {}, {}});
  }
  offerChannel(*a, *channel);
  rearm(*a);
  respondSuccess(req);
}

}  // namespace kturn::turn
