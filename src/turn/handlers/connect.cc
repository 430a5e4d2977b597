// TCP allocations (RFC 6062): Connect (§5.2) and ConnectionBind (§5.4). What becomes of the peer
// connections afterwards is in server_tcp_relay.cc. The core decides and answers; the I/O layer
// (RelayAllocator) opens, joins and closes the sockets, and the bytes of a bound connection never
// come through here.
#include "stun/attributes.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleConnect(Request& req) {
  ++req.stats.requests_connect;
  Allocation* a = allocations_.find(req.five_tuple);
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  if (a == nullptr) return respondError(req, stun::error::kAllocationMismatch);
  // Connect is for TCP allocations only; coturn answers 403 too.
  if (a->relay_protocol != TransportProtocol::kTcp) {
    return respondError(req, stun::error::kForbidden);
  }
  const auto peer_attr = req.message.value(stun::attr::kXorPeerAddress);
  const auto peer =
      peer_attr ? stun::decodeXorAddress(*peer_attr, req.message.xorPad()) : std::nullopt;
  if (!peer || peer->port == 0) return respondError(req, stun::error::kBadRequest);
  if (!a->relays(peer->family())) {
    return respondError(req, stun::error::kPeerAddressFamilyMismatch);
  }
  // One connection per peer, whether it is being made, awaiting its bind or bound.
  if (a->findConnection(*peer) != nullptr) {
    return respondError(req, stun::error::kConnectionAlreadyExists);
  }
  if (policy_.admittingTcp(a->listener, *peer) == nullptr) {
    ++req.stats.permission_denied;
    return respondError(req, stun::error::kForbidden);
  }
  if (PeerConnections::full(*a)) return respondError(req, stun::error::kInsufficientCapacity);

  PeerConnection c;
  c.id = connections_.nextId();
  c.peer = *peer;
  c.state = PeerConnection::State::kConnecting;
  const stun::MessageView& m = req.message;
  std::copy(m.transactionId().begin(), m.transactionId().end(), c.connect_transaction.begin());
  c.connect_sha256 =
      m.has(stun::attr::kMessageIntegritySha256) && !m.has(stun::attr::kMessageIntegrity);
  c.connect_fingerprint = m.has(stun::attr::kFingerprint);
  if (!relays_.connectPeer(a->id, c.id, *peer)) {
    ++req.stats.peer_connections_failed;
    return respondError(req, stun::error::kConnectionTimeoutOrFailure);
  }
  connections_.add(*a, c);
  // Answered by onPeerConnected().
}

void Server::handleConnectionBind(Request& req) {
  ++req.stats.requests_connection_bind;
  // RFC 6062 §5.4: a new TCP or TLS connection of its own (onStun() refused UDP), holding no
  // allocation, naming a peer connection that awaits its bind. Anything else is 400, as in coturn.
  if (allocations_.find(req.five_tuple) != nullptr) {
    return respondError(req, stun::error::kBadRequest);
  }
  const auto id_attr = req.message.value(stun::attr::kConnectionId);
  const auto id = id_attr ? stun::decodeUint32(*id_attr) : std::nullopt;
  const PeerConnections::Held held =
      id ? connections_.find(*id, allocations_) : PeerConnections::Held{};
  PeerConnection* c = held.connection;
  if (c == nullptr || c->state != PeerConnection::State::kPendingBind) {
    return respondError(req, stun::error::kBadRequest);
  }
  // The allocation's own credentials (username and key), as for its other requests.
  if (!authenticate(req, held.allocation)) return;
  if (rejectUnknownAttributes(req)) return;
  c->state = PeerConnection::State::kBound;
  ++req.stats.peer_connections_bound;
  respondSuccess(req);
  relays_.bindConnection(c->id, req.five_tuple);
}

}  // namespace kturn::turn
