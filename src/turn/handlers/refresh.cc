// Refresh (RFC 8656 §7.3), including lifetime 0 to delete.
#include <optional>

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

  // REQUESTED-ADDRESS-FAMILY names one relay of the allocation (RFC 8656 §7.3); a family it
  // does not hold is 443.
  std::optional<AddressFamily> family;
  if (const auto family_attr = req.message.value(stun::attr::kRequestedAddressFamily)) {
    const auto value = stun::decodeAddressFamily(*family_attr);
    if (!value) return respondError(req, stun::error::kBadRequest);
    if (*value != 0x01 && *value != 0x02) {
      return respondError(req, stun::error::kPeerAddressFamilyMismatch);
    }
    family = static_cast<AddressFamily>(*value);
    if (!a->relays(*family)) return respondError(req, stun::error::kPeerAddressFamilyMismatch);
  }

  const auto lifetime_attr = req.message.value(stun::attr::kLifetime);
  const auto requested = lifetime_attr ? stun::decodeUint32(*lifetime_attr) : std::nullopt;
  Seconds lifetime{0};
  if (requested && *requested == 0 && family && a->relayed_additional) {
    // Deletes one half of a dual allocation, as coturn does; the other relays on.
    releaseFamily(*a, *family);
  } else if (requested && *requested == 0) {
    ++cur_->allocations_deleted;
    // `req.key` stays valid: it points at the request's own copy.
    deleteAllocation(*a, SessionEnd::kDeleted, req.now);
  } else {
    lifetime = grantedLifetime(req.message);
    a->expires = req.now.mono + lifetime;
    offerChannels(*a);  // the kernel's entries end with the allocation: move them
    rearm(*a);
  }
  respond(req, stun::MessageClass::kSuccessResponse, [&](stun::MessageBuilder& b) {
    b.addUint32(stun::attr::kLifetime, static_cast<uint32_t>(lifetime.count()));
  });
}

}  // namespace kturn::turn
