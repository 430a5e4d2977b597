// CreatePermission (RFC 8656 §9.2): all XOR-PEER-ADDRESSes are admitted or none is.
#include <algorithm>
#include <vector>

#include "stun/attributes.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleCreatePermission(Request& req) {
  ++req.stats.requests_create_permission;
  Allocation* a = allocations_.find(req.five_tuple);
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);

  // First pass validates every peer and counts the permissions it would add; the second
  // installs, so a refusal installs nothing.
  size_t peers = 0;
  const MonoTime now = req.now.mono;
  const size_t held = a->activePermissions(now);
  const size_t room = config_->max_permissions_per_allocation > held
                          ? config_->max_permissions_per_allocation - held
                          : 0;
  // Distinct peer IPs without an unexpired permission; it stops growing once it exceeds `room`
  // (and a request carries at most stun::MessageView::kMaxAttributes peers), so it stays short.
  std::vector<IpAddress> added;
  for (const stun::Attribute& attr : req.message.attributes()) {
    if (attr.type != stun::attr::kXorPeerAddress) continue;
    const auto peer = stun::decodeXorAddress(attr.value, req.message.xorPad());
    if (!peer) return respondError(req, stun::error::kBadRequest);
    if (!a->relays(peer->family())) {
      return respondError(req, stun::error::kPeerAddressFamilyMismatch);
    }
    PolicyVerdict verdict;
    // A TCP allocation's peers come from TCP clusters only (a permission admits their
    // connections, RFC 6062 §5.3).
    const bool admitted =
        a->relay_protocol == TransportProtocol::kTcp
            ? policy_.admittingTcp(a->listener, {peer->ip, 0}, /*ip_only=*/true) != nullptr
            : policy_.admitsIp(a->listener, verdict, peer->ip);
    if (!admitted) {
      ++req.stats.permission_denied;
      return respondError(req, stun::error::kForbidden);
    }
    ++peers;
    const Permission* existing = a->findPermission(peer->ip);
    if ((existing == nullptr || existing->expires <= now) && added.size() <= room &&
        std::find(added.begin(), added.end(), peer->ip) == added.end()) {
      added.push_back(peer->ip);
    }
  }
  if (peers == 0) return respondError(req, stun::error::kBadRequest);
  // A CreatePermission the server lacks the capacity for gets 508 (RFC 8656, as RFC 5766
  // §9.2); refreshing permissions the allocation already holds never counts against the limit.
  if (added.size() > room) {
    ++req.stats.permissions_rejected_capacity;
    return respondError(req, stun::error::kInsufficientCapacity);
  }

  const MonoTime expires = req.now.mono + config_->lifetimes.permission;
  for (const stun::Attribute& attr : req.message.attributes()) {
    if (attr.type != stun::attr::kXorPeerAddress) continue;
    const IpAddress ip = stun::decodeXorAddress(attr.value, req.message.xorPad())->ip;
    if (Permission* p = a->findPermission(ip)) {
      p->expires = expires;
    } else {
      a->permissions.push_back(Permission{ip, expires, {}, {}});
    }
    // The kernel's entries for channels to this peer end with its permission: move them.
    for (ChannelBinding& c : a->channels) {
      if (c.peer.ip == ip) offerChannel(*a, c);
    }
  }
  rearm(*a);
  respondSuccess(req);
}

}  // namespace kturn::turn
