// CreatePermission (RFC 8656 §9.2): all XOR-PEER-ADDRESSes are admitted or none is.
#include "stun/attributes.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleCreatePermission(Request& req) {
  ++cur_->requests_create_permission;
  Allocation* a = allocations_.find(req.five_tuple);
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);

  // First pass validates every peer; the second installs, so a refusal installs nothing.
  size_t peers = 0;
  for (const stun::Attribute& attr : req.message.attributes()) {
    if (attr.type != stun::attr::kXorPeerAddress) continue;
    const auto peer = stun::decodeXorAddress(attr.value, req.message.xorPad());
    if (!peer) return respondError(req, stun::error::kBadRequest);
    if (peer->family() != a->relayed.family()) {
      return respondError(req, stun::error::kPeerAddressFamilyMismatch);
    }
    PolicyVerdict verdict;
    if (!admitsIp(*a, verdict, peer->ip)) {
      ++cur_->permission_denied;
      return respondError(req, stun::error::kForbidden);
    }
    ++peers;
  }
  if (peers == 0) return respondError(req, stun::error::kBadRequest);

  const MonoTime expires = req.now.mono + config_->lifetimes.permission;
  for (const stun::Attribute& attr : req.message.attributes()) {
    if (attr.type != stun::attr::kXorPeerAddress) continue;
    const IpAddress ip = stun::decodeXorAddress(attr.value, req.message.xorPad())->ip;
    if (Permission* p = a->findPermission(ip)) {
      p->expires = expires;
    } else {
      a->permissions.push_back(Permission{ip, expires, {}, {}});
    }
  }
  rearm(*a);
  respondSuccess(req);
}

}  // namespace kturn::turn
