// Allocate (RFC 8656 §7.2).
#include <algorithm>

#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn {
namespace {

// `ticket`: the MOBILITY-TICKET of a mobile allocation (RFC 8016 §3.1), else empty.
void addSuccessAttributes(stun::MessageBuilder& b, const Allocation& a, Seconds lifetime,
                          std::string_view ticket) {
  b.addXorAddress(
      stun::attr::kXorRelayedAddress,
      a.relayed_public_ip ? TransportAddress{*a.relayed_public_ip, a.relayed.port} : a.relayed);
  if (a.relayed_additional) b.addXorAddress(stun::attr::kXorRelayedAddress, *a.relayed_additional);
  if (a.additional_error != 0) {
    // ADDRESS-ERROR-CODE (RFC 8656 §18.11): family, 11 reserved bits, class, number, reason.
    const std::string_view reason = stun::error::reasonPhrase(a.additional_error);
    uint8_t value[4 + 32];
    value[0] = static_cast<uint8_t>(AddressFamily::kIPv6);
    value[1] = 0;
    value[2] = static_cast<uint8_t>(a.additional_error / 100);
    value[3] = static_cast<uint8_t>(a.additional_error % 100);
    const size_t n = std::min(reason.size(), sizeof value - 4);
    std::copy_n(reason.begin(), n, value + 4);
    b.add(stun::attr::kAddressErrorCode, {value, 4 + n});
  }
  b.addUint32(stun::attr::kLifetime, static_cast<uint32_t>(lifetime.count()));
  if (a.reservation_token) {
    uint8_t token[8];
    stun::store32(token, static_cast<uint32_t>(*a.reservation_token >> 32));
    stun::store32(token + 4, static_cast<uint32_t>(*a.reservation_token));
    b.add(stun::attr::kReservationToken, token);
  }
  b.addXorAddress(stun::attr::kXorMappedAddress, a.five_tuple.client);
  if (!ticket.empty()) b.addString(stun::attr::kMobilityTicket, ticket);
}

// What an Allocate asks of the relay (RFC 8656 §7.2, RFC 6062 §5.1), or the error code that
// refuses it. Pure: no state, no answer sent.
struct RelayAsk {
  RelayRequest relay;
  int error = 0;
};

RelayAsk parseRelayRequest(const stun::MessageView& m, TransportProtocol client_transport) {
  const auto refuse = [](int code) { return RelayAsk{{}, code}; };
  const auto transport_attr = m.value(stun::attr::kRequestedTransport);
  const auto transport =
      transport_attr ? stun::decodeRequestedTransport(*transport_attr) : std::nullopt;
  if (!transport) return refuse(stun::error::kBadRequest);
  const bool tcp = *transport == static_cast<uint8_t>(TransportProtocol::kTcp);
  if (!tcp && *transport != static_cast<uint8_t>(TransportProtocol::kUdp)) {
    return refuse(stun::error::kUnsupportedTransportProtocol);
  }
  // A TCP allocation (RFC 6062 §5.1) is made over TCP or TLS, and has no use for attributes
  // about UDP ports and fragments. kturn relays it in one address family.
  if (tcp && (client_transport != TransportProtocol::kTcp || m.has(stun::attr::kDontFragment) ||
              m.has(stun::attr::kEvenPort) || m.has(stun::attr::kReservationToken) ||
              m.has(stun::attr::kAdditionalAddressFamily))) {
    return refuse(stun::error::kBadRequest);
  }

  RelayAsk ask;
  RelayRequest& relay = ask.relay;
  relay.protocol = tcp ? TransportProtocol::kTcp : TransportProtocol::kUdp;
  relay.family = AddressFamily::kIPv4;  // without REQUESTED-ADDRESS-FAMILY (RFC 8656 §7.2)
  relay.dont_fragment = m.has(stun::attr::kDontFragment);
  const auto token_attr = m.value(stun::attr::kReservationToken);
  const auto even_attr = m.value(stun::attr::kEvenPort);
  const auto family_attr = m.value(stun::attr::kRequestedAddressFamily);
  const auto additional_attr = m.value(stun::attr::kAdditionalAddressFamily);
  if (token_attr) {
    // RESERVATION-TOKEN excludes EVEN-PORT and REQUESTED-ADDRESS-FAMILY (RFC 8656 §7.2), and
    // a dual allocation: the token names one reserved port.
    if (even_attr || family_attr || additional_attr || token_attr->size() != 8) {
      return refuse(stun::error::kBadRequest);
    }
    relay.reservation_token =
        (uint64_t{stun::load32(token_attr->data())} << 32) | stun::load32(token_attr->data() + 4);
  }
  if (even_attr) {
    const auto reserve = stun::decodeEvenPort(*even_attr);
    if (!reserve) return refuse(stun::error::kBadRequest);
    // A port pair to reserve and two families to relay do not combine (RFC 8656 §7.2).
    if (*reserve && additional_attr) return refuse(stun::error::kBadRequest);
    relay.even_port = true;
    relay.reserve_next = *reserve;
  }
  if (family_attr) {
    if (additional_attr) return refuse(stun::error::kBadRequest);
    const auto family = stun::decodeAddressFamily(*family_attr);
    if (!family) return refuse(stun::error::kBadRequest);
    if (*family != 0x01 && *family != 0x02) return refuse(stun::error::kAddressFamilyNotSupported);
    relay.family = static_cast<AddressFamily>(*family);
  }
  if (additional_attr) {
    // Dual allocation (RFC 8656 §7.2): ADDITIONAL-ADDRESS-FAMILY may only ask for IPv6.
    const auto family = stun::decodeAddressFamily(*additional_attr);
    if (!family || *family != 0x02) return refuse(stun::error::kBadRequest);
    relay.additional_ipv6 = true;
  }
  return ask;
}

// The error code for a relay the I/O layer could not open, 0 for a capacity refusal (which may be
// redirected: refuseForCapacity).
int relayRefusal(const Error& error, const RelayRequest& relay) {
  switch (error.code) {
    case Error::Code::kUnsupported:
      // No relay of this family, or (an I/O layer without TCP relays) of this transport.
      return relay.protocol == TransportProtocol::kTcp && relay.family == AddressFamily::kIPv4
                 ? stun::error::kUnsupportedTransportProtocol
                 : stun::error::kAddressFamilyNotSupported;
    case Error::Code::kExhausted:
      return 0;
    default:
      // An unknown RESERVATION-TOKEN: no sibling holds it either, so no redirect.
      return stun::error::kInsufficientCapacity;
  }
}

}  // namespace

void Server::refuseForCapacity(Request& req) {
  const TransportAddress* alternate = alternateServer(req);
  if (alternate == nullptr) {
    ++req.stats.allocations_rejected_capacity;
    return respondError(req, stun::error::kInsufficientCapacity);
  }
  redirect(req, *alternate);
}

const TransportAddress* Server::alternateServer(const Request& req) const {
  const ListenerPolicy* policy = config_->listener(req.listener);
  if (policy == nullptr) return nullptr;
  // RFC 8489 §10: the alternate server is of the family of the request's source address.
  for (const TransportAddress& a : policy->alternate_servers) {
    if (a.family() == req.five_tuple.client.family()) return &a;
  }
  return nullptr;
}

void Server::redirect(Request& req, const TransportAddress& alternate) {
  const ListenerPolicy* policy = config_->listener(req.listener);
  // Authenticated like any response to this request, so that a client that holds the
  // credentials can tell the redirect is ours (coturn's client checks it).
  ++req.stats.allocations_redirected;
  ++req.stats.error_responses;
  respond(req, stun::MessageClass::kErrorResponse, [&](stun::MessageBuilder& b) {
    b.addErrorCode(stun::error::kTryAlternate).addAddress(stun::attr::kAlternateServer, alternate);
    if (policy->secure && !policy->alternate_domain.empty()) {
      b.addString(stun::attr::kAlternateDomain, policy->alternate_domain);
    }
  });
}

void Server::handleAllocate(Request& req) {
  ++req.stats.requests_allocate;
  const stun::MessageView& m = req.message;
  Allocation* existing = allocations_.find(req.five_tuple);
  if (!authenticate(req, existing)) return;
  if (rejectUnknownAttributes(req)) return;
  if (existing != nullptr) return answerAgain(req, *existing);

  // RFC 8016 §3.1: a client asks for mobility with an empty MOBILITY-TICKET. Refused with 405
  // when mobility is off, as coturn does; granted (a ticket in the answer) for TURN-UDP.
  const auto mobility_attr = m.value(stun::attr::kMobilityTicket);
  if (mobility_attr && !config_->mobility) {
    ++req.stats.mobility_refused;
    return respondError(req, stun::error::kMobilityForbidden);
  }
  if (mobility_attr && !mobility_attr->empty()) return respondError(req, stun::error::kBadRequest);

  RelayAsk ask = parseRelayRequest(m, req.five_tuple.protocol);
  if (ask.error != 0) return respondError(req, ask.error);
  RelayRequest& relay = ask.relay;
  relay.listener = req.listener;
  relay.five_tuple = req.five_tuple;

  // Counted for the whole process (every core's allocations of this user); handed back below if
  // the allocation is not made after all, else when it ends (deleteAllocation).
  const std::string_view username = stun::decodeString(*m.value(stun::attr::kUsername));
  if (!withinQuotas(req, username, relay.reservation_token.has_value())) return;
  Allocation& a = allocations_.create(req.five_tuple);
  relay.allocation = a.id;
  auto grant = relays_.open(relay);
  if (!grant) {
    allocations_.erase(a.id);
    user_quota_.release(username);
    const int refusal = relayRefusal(grant.error(), relay);
    if (refusal == 0) return refuseForCapacity(req);
    if (refusal == stun::error::kInsufficientCapacity) ++req.stats.allocations_rejected_capacity;
    return respondError(req, refusal);
  }

  const Seconds lifetime = grantedLifetime(m);
  a.listener = req.listener;
  a.relay_protocol = relay.protocol;
  a.relayed = grant->relayed;
  a.relayed_public_ip = grant->relayed_public_ip;
  a.relayed_additional = grant->additional;
  if (relay.additional_ipv6 && !grant->additional) {
    a.additional_error = grant->additional_error == Error::Code::kUnsupported
                             ? stun::error::kAddressFamilyNotSupported
                             : stun::error::kInsufficientCapacity;
  }
  a.reservation_token = grant->reservation_token;
  a.expires = req.now.mono + lifetime;
  a.created = req.now.mono;
  a.created_unix = req.now.unix_seconds;
  std::copy(m.transactionId().begin(), m.transactionId().end(), a.allocate_transaction.begin());
  a.username = username;
  a.key = *req.key;
  a.oauth = req.oauth;
  rearm(a);
  ++req.stats.allocations_created;
  std::string ticket;
  if (mobility_attr && relay.protocol == TransportProtocol::kUdp &&
      mobileTransport(req.listener, req.five_tuple.protocol)) {
    do {
      a.mobility_id = nextRandom();
    } while (a.mobility_id == 0 || by_mobility_.contains(a.mobility_id));
    by_mobility_[a.mobility_id] = a.id;
    ticket = ticketFor(a);
  }

  respond(req, stun::MessageClass::kSuccessResponse,
          [&](stun::MessageBuilder& b) { addSuccessAttributes(b, a, lifetime, ticket); });
}

void Server::answerAgain(Request& req, const Allocation& existing) {
  // A retransmitted Allocate gets the original answer; anything else on a used 5-tuple is 437.
  const stun::MessageView& m = req.message;
  if (!std::equal(existing.allocate_transaction.begin(), existing.allocate_transaction.end(),
                  m.transactionId().begin())) {
    return respondError(req, stun::error::kAllocationMismatch);
  }
  const auto remaining = std::chrono::duration_cast<Seconds>(existing.expires - req.now.mono);
  const std::string ticket = existing.mobility_id != 0 ? ticketFor(existing) : "";
  respond(req, stun::MessageClass::kSuccessResponse, [&](stun::MessageBuilder& b) {
    addSuccessAttributes(b, existing, std::max(remaining, Seconds(0)), ticket);
  });
}

bool Server::withinQuotas(Request& req, std::string_view username, bool reserved) {
  const ServerConfig& cfg = *config_;
  if (!user_quota_.tryAcquire(username, cfg.max_allocations_per_user)) {
    ++req.stats.allocations_rejected_quota;
    respondError(req, stun::error::kAllocationQuotaReached);
    return false;
  }
  // RFC 8656 §21.3.1: one source address (a host, or every client behind one NAT) cannot hold
  // the whole relay port range. 486 like the per-user quota, since the client is over its quota.
  if (cfg.max_allocations_per_source != 0 &&
      allocations_.sourceCount(req.five_tuple.client.ip) >= cfg.max_allocations_per_source) {
    user_quota_.release(username);
    ++req.stats.allocations_rejected_source_quota;
    respondError(req, stun::error::kAllocationQuotaReached);
    return false;
  }
  if (cfg.max_allocations != 0 && allocations_.size() >= cfg.max_allocations) {
    user_quota_.release(username);
    refuseForCapacity(req);
    return false;
  }
  // Over the process's capacity marks (admin.capacity): a listener with an alternate server
  // sends the new client there, and the allocations held here, with their calls, stay. Without
  // one the marks only steer readiness, and the Allocate is granted. An Allocate that names a
  // RESERVATION-TOKEN stays: the port it reserved (the second of an EVEN-PORT pair) is here.
  if (!reserved && over_capacity_.load(std::memory_order_relaxed)) {
    if (const TransportAddress* alternate = alternateServer(req)) {
      user_quota_.release(username);
      redirect(req, *alternate);
      return false;
    }
  }
  return true;
}

}  // namespace kturn::turn
