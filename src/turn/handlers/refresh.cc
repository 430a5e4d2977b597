// Refresh (RFC 8656 §7.3), including lifetime 0 to delete, and the mobility of RFC 8016: a
// Refresh with MOBILITY-TICKET from a new client address takes the allocation along.
#include <optional>

#include "stun/attributes.h"
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn {
namespace {

constexpr uint32_t nextGeneration(uint32_t g) { return (g + 1) & MobilityTickets::kMaxGeneration; }

}  // namespace

void Server::handleRefresh(Request& req) {
  ++req.stats.requests_refresh;
  Allocation* a = allocations_.find(req.five_tuple);
  if (a == nullptr && config_->mobility) {
    if (const auto ticket = req.message.value(stun::attr::kMobilityTicket)) {
      return moveToThisAddress(req, *ticket);
    }
  }
  refreshAllocation(req, a);
}

void Server::refreshAllocation(Request& req, Allocation* a) {
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);

  if (const auto ticket_attr = req.message.value(stun::attr::kMobilityTicket)) {
    // From the allocation's own address a ticket must name it: as it is now, or as it was
    // before the move this address made (the request that moved it, and its retransmissions).
    const auto ticket = tickets_.open(stun::decodeString(*ticket_attr));
    const bool own = ticket && a->mobility_id != 0 && ticket->id == a->mobility_id &&
                     (ticket->generation == a->mobility_generation ||
                      nextGeneration(ticket->generation) == a->mobility_generation);
    if (!config_->mobility || !own) {
      ++req.stats.mobility_refused;
      return respondError(
          req, config_->mobility ? stun::error::kBadRequest : stun::error::kMobilityForbidden);
    }
  }

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
  std::string ticket;  // RFC 8016: a live mobile allocation's answer carries its current ticket
  if (requested && *requested == 0 && family && a->relayed_additional) {
    // Deletes one half of a dual allocation, as coturn does; the other relays on.
    releaseFamily(*a, *family);
  } else if (requested && *requested == 0) {
    ++req.stats.allocations_deleted;
    // `req.key` stays valid: it points at the request's own copy.
    deleteAllocation(*a, SessionEnd::kDeleted, req.now);
    a = nullptr;
  } else {
    lifetime = grantedLifetime(req.message);
    a->expires = req.now.mono + lifetime;
    offerChannels(*a);  // the kernel's entries end with the allocation: move them
    rearm(*a);
  }
  if (a != nullptr && a->mobility_id != 0) ticket = ticketFor(*a);
  respond(req, stun::MessageClass::kSuccessResponse, [&](stun::MessageBuilder& b) {
    b.addUint32(stun::attr::kLifetime, static_cast<uint32_t>(lifetime.count()));
    if (!ticket.empty()) b.addString(stun::attr::kMobilityTicket, ticket);
  });
}

void Server::moveToThisAddress(Request& req, std::span<const uint8_t> ticket_attr) {
  const auto ticket = tickets_.open(stun::decodeString(ticket_attr));
  if (!ticket || !mobileTransport(req.listener, req.five_tuple.protocol)) {
    // Not a ticket of this process (forged, altered, or from before a restart), or a transport
    // kturn does not move allocations to.
    ++req.stats.mobility_refused;
    return respondError(req, ticket ? stun::error::kMobilityForbidden : stun::error::kBadRequest);
  }
  const auto self = worker_index_;
  if (ticket->owner != self) {
    MoveRequest move{.listener = req.listener,
                     .five_tuple = req.five_tuple,
                     .packet = {req.message.bytes().begin(), req.message.bytes().end()}};
    if (router_ != nullptr && router_->requestMove(ticket->owner, std::move(move))) return;
    ++req.stats.mobility_refused;
    return respondError(req, stun::error::kAllocationMismatch);
  }
  auto moved = release(req, *ticket);
  if (!moved) return;
  Allocation& a = adopt(std::move(*moved), req);
  refreshAllocation(req, &a);
}

std::optional<MovedAllocation> Server::release(Request& req, const MobilityTicket& ticket) {
  const auto it = by_mobility_.find(ticket.id);
  Allocation* a = it == by_mobility_.end() ? nullptr : allocations_.find(it->second);
  if (a == nullptr || a->mobility_generation != ticket.generation) {
    // Stale: the allocation ended, or moved since (a newer ticket names it).
    ++req.stats.mobility_refused;
    respondError(req, stun::error::kAllocationMismatch);
    return std::nullopt;
  }
  // The allocation's own credentials, as for any of its requests (RFC 8016 §3.2: the ticket
  // alone moves nothing).
  if (!authenticate(req, a)) return std::nullopt;
  if (rejectUnknownAttributes(req)) return std::nullopt;
  MovedAllocation moved{.allocation = nullptr, .relay = relays_.detach(a->id)};
  if (!moved.relay) {
    // Only UDP relays move, and only their allocations get tickets: cannot be, but an answer
    // beats an allocation without its relay.
    respondError(req, stun::error::kServerError);
    return std::nullopt;
  }
  withdrawChannels(*a);  // counts what the kernel relayed for them, here
  by_mobility_.erase(it);
  user_quota_.release(a->username);
  moved.allocation = allocations_.take(a->id);
  return moved;
}

Allocation& Server::adopt(MovedAllocation moved, Request& req) {
  Allocation& a = allocations_.adopt(std::move(moved.allocation), req.five_tuple);
  relays_.attach(a.id, std::move(moved.relay));
  a.listener = req.listener;
  a.mobility_generation = nextGeneration(a.mobility_generation);
  by_mobility_[a.mobility_id] = a.id;
  // Counted for the process again; never refused, the allocation exists.
  user_quota_.tryAcquire(a.username, 0);
  // Another core's policy epochs mean nothing here: every peer is checked again.
  PeerPolicy::forgetVerdicts(a);
  rearm(a);
  ++req.stats.mobility_moves;
  return a;
}

std::optional<MovedAllocation> Server::releaseForMove(const MoveRequest& request, const Now& now,
                                                      Actions& out) {
  const auto message = stun::MessageView::parse(request.packet);
  if (!message) return std::nullopt;  // the receiving core parsed it
  Request req{request.listener, statsFor(request.listener), request.five_tuple, *message, now, out};
  const auto ticket = tickets_.open(stun::decodeString(
      message->value(stun::attr::kMobilityTicket).value_or(std::span<const uint8_t>{})));
  if (!ticket) return std::nullopt;
  return release(req, *ticket);
}

void Server::adoptMoved(MovedAllocation moved, const MoveRequest& request, const Now& now,
                        Actions& out) {
  const auto message = stun::MessageView::parse(request.packet);
  // This core parsed the request and had no allocation on its 5-tuple when it asked (the
  // worker holds the 5-tuple's datagrams meanwhile); were that not so, the allocation ends here:
  // its relay closes with the handle.
  if (!message || allocations_.find(request.five_tuple) != nullptr) return;
  Request req{request.listener, statsFor(request.listener), request.five_tuple, *message, now, out};
  Allocation& a = adopt(std::move(moved), req);
  last_request_method_ = static_cast<uint16_t>(stun::Method::kRefresh);
  refreshAllocation(req, &a);
}

std::string Server::ticketFor(const Allocation& a) const {
  return tickets_.seal(
      {.id = a.mobility_id, .owner = worker_index_, .generation = a.mobility_generation});
}

bool Server::mobileTransport(ListenerId listener, TransportProtocol protocol) const {
  const ListenerPolicy* policy = config_->listener(listener);
  return protocol == TransportProtocol::kUdp && policy != nullptr && !policy->secure;
}

}  // namespace kturn::turn
