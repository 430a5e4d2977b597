// Refresh (RFC 8656 §7.3), including lifetime 0 to delete.
#include "stun/attributes.h"
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleRefresh(Request& req) {
  ++cur_->requests_refresh;
  Allocation* a = allocations_.find(req.five_tuple);
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);

  if (const auto family_attr = req.message.value(stun::attr::kRequestedAddressFamily)) {
    const auto family = stun::decodeAddressFamily(*family_attr);
    if (!family) return respondError(req, stun::error::kBadRequest);
    if (*family != static_cast<uint8_t>(a->relayed.family())) {
      return respondError(req, stun::error::kPeerAddressFamilyMismatch);
    }
  }

  const auto lifetime_attr = req.message.value(stun::attr::kLifetime);
  const auto requested = lifetime_attr ? stun::decodeUint32(*lifetime_attr) : std::nullopt;
  Seconds lifetime{0};
  if (requested && *requested == 0) {
    ++cur_->allocations_deleted;
    // `req.key` stays valid: it points at the request's own copy.
    deleteAllocation(*a, SessionEnd::kDeleted, req.now);
  } else {
    lifetime = grantedLifetime(req.message);
    a->expires = req.now.mono + lifetime;
    rearm(*a);
  }
  respond(req, stun::MessageClass::kSuccessResponse, [&](stun::MessageBuilder& b) {
    b.addUint32(stun::attr::kLifetime, static_cast<uint32_t>(lifetime.count()));
  });
}

}  // namespace kturn::turn
