// Binding (RFC 8489 §6.3): the STUN server function, no authentication.
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleBinding(Request& req) {
  ++req.stats.requests_binding;
  if (rejectUnknownAttributes(req)) return;
  respond(req, stun::MessageClass::kSuccessResponse, [&](stun::MessageBuilder& b) {
    b.addXorAddress(stun::attr::kXorMappedAddress, req.five_tuple.client);
  });
}

}  // namespace kturn::turn
