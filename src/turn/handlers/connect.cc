// TCP allocations (RFC 6062): Connect (§5.2), ConnectionBind (§5.4), ConnectionAttempt (§5.3)
// and the life of peer connections. The core decides and answers; the I/O layer (RelayAllocator)
// opens, joins and closes the sockets, and the bytes of a bound connection never come through
// here.
#include "stun/attributes.h"
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn {
namespace {

// RFC 6062 §5.2 and §5.3: a connection not bound within 30 s is closed.
constexpr Seconds kBindTimeout{30};
// Peer connections one allocation may hold, open or pending: each is a socket and buffers in the
// I/O layer. A Connect past it gets 508, a peer connecting past it is closed.
constexpr size_t kMaxConnectionsPerAllocation = 64;

void addConnectionId(stun::MessageBuilder& b, ConnectionId id) {
  b.addUint32(stun::attr::kConnectionId, id);
}

}  // namespace

void Server::handleConnect(Request& req) {
  ++cur_->requests_connect;
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
  const ListenerPolicy* policy = config_->listener(a->listener);
  if (policy == nullptr || policy->admittingTcp(*peer) == nullptr) {
    ++cur_->permission_denied;
    return respondError(req, stun::error::kForbidden);
  }
  if (a->connections.size() >= kMaxConnectionsPerAllocation) {
    return respondError(req, stun::error::kInsufficientCapacity);
  }

  PeerConnection c;
  c.id = nextConnectionId();
  c.peer = *peer;
  c.state = PeerConnection::State::kConnecting;
  const stun::MessageView& m = req.message;
  std::copy(m.transactionId().begin(), m.transactionId().end(), c.connect_transaction.begin());
  c.connect_sha256 =
      m.has(stun::attr::kMessageIntegritySha256) && !m.has(stun::attr::kMessageIntegrity);
  c.connect_fingerprint = m.has(stun::attr::kFingerprint);
  if (!relays_.connectPeer(a->id, c.id, *peer)) {
    ++cur_->peer_connections_failed;
    return respondError(req, stun::error::kConnectionTimeoutOrFailure);
  }
  connection_owners_.emplace(c.id, a->id);
  a->connections.push_back(c);
  // Answered by onPeerConnected().
}

void Server::onPeerConnected(ConnectionId id, bool connected, const Now& now, Actions& out) {
  const auto owner = connection_owners_.find(id);
  if (owner == connection_owners_.end()) return;
  Allocation* a = allocations_.find(owner->second);
  if (a == nullptr) return;
  PeerConnection* c = a->findConnection(id);
  if (c == nullptr || c->state != PeerConnection::State::kConnecting) return;
  countFor(a->listener);
  const Reply reply{
      .listener = a->listener,
      .client = a->five_tuple.client,
      .method_bits = static_cast<uint16_t>(stun::Method::kConnect),
      .cls = connected ? stun::MessageClass::kSuccessResponse : stun::MessageClass::kErrorResponse,
      .transaction = c->connect_transaction,
      .key = &a->key,
      .sha256 = c->connect_sha256,
      .fingerprint = c->connect_fingerprint};
  if (!connected) {
    ++cur_->peer_connections_failed;
    ++cur_->error_responses;
    send(reply, out,
         [](stun::MessageBuilder& b) { b.addErrorCode(stun::error::kConnectionTimeoutOrFailure); });
    forgetConnection(*a, id);  // `c` and `reply.transaction` are gone from here on
    return;
  }
  ++cur_->peer_connections_connected;
  c->state = PeerConnection::State::kPendingBind;
  c->deadline = now.mono + kBindTimeout;
  send(reply, out, [id](stun::MessageBuilder& b) { addConnectionId(b, id); });
  rearm(*a);
}

ConnectionId Server::onPeerConnectionAccepted(AllocationId allocation, const TransportAddress& peer,
                                              const Now& now, Actions& out) {
  Allocation* a = allocations_.find(allocation);
  if (a == nullptr || a->relay_protocol != TransportProtocol::kTcp) return 0;
  countFor(a->listener);
  // RFC 6062 §5.3: only a peer with a permission, and (kturn) only from a TCP cluster the
  // allocation's listener routes to, since a permission may predate a config change.
  const Permission* permission = a->findPermission(peer.ip);
  const ListenerPolicy* policy = config_->listener(a->listener);
  if (permission == nullptr || permission->expires <= now.mono || policy == nullptr ||
      policy->admittingTcp(peer, /*ip_only=*/true) == nullptr ||
      a->connections.size() >= kMaxConnectionsPerAllocation) {
    ++cur_->peer_connections_refused;
    return 0;
  }
  PeerConnection c;
  c.id = nextConnectionId();
  c.peer = peer;
  c.state = PeerConnection::State::kPendingBind;
  c.deadline = now.mono + kBindTimeout;
  connection_owners_.emplace(c.id, a->id);
  a->connections.push_back(c);
  ++cur_->peer_connections_accepted;
  rearm(*a);

  const stun::TransactionId transaction = nextTransactionId();
  send({.listener = a->listener,
        .client = a->five_tuple.client,
        .method_bits = static_cast<uint16_t>(stun::Method::kConnectionAttempt),
        .cls = stun::MessageClass::kIndication,
        .transaction = transaction,
        .key = nullptr,
        .sha256 = false,
        .fingerprint = false},
       out, [&](stun::MessageBuilder& b) {
         b.addXorAddress(stun::attr::kXorPeerAddress, peer);
         addConnectionId(b, c.id);
       });
  return c.id;
}

void Server::handleConnectionBind(Request& req) {
  ++cur_->requests_connection_bind;
  // RFC 6062 §5.4: a new TCP or TLS connection of its own (onStun() refused UDP), holding no
  // allocation, naming a peer connection that awaits its bind. Anything else is 400, as in coturn.
  if (allocations_.find(req.five_tuple) != nullptr) {
    return respondError(req, stun::error::kBadRequest);
  }
  const auto id_attr = req.message.value(stun::attr::kConnectionId);
  const auto id = id_attr ? stun::decodeUint32(*id_attr) : std::nullopt;
  const auto owner = id ? connection_owners_.find(*id) : connection_owners_.end();
  Allocation* a = owner != connection_owners_.end() ? allocations_.find(owner->second) : nullptr;
  PeerConnection* c = a != nullptr ? a->findConnection(*id) : nullptr;
  if (c == nullptr || c->state != PeerConnection::State::kPendingBind) {
    return respondError(req, stun::error::kBadRequest);
  }
  // The allocation's own credentials (username and key), as for its other requests.
  if (!authenticate(req, a)) return;
  if (rejectUnknownAttributes(req)) return;
  c->state = PeerConnection::State::kBound;
  ++cur_->peer_connections_bound;
  respondSuccess(req);
  relays_.bindConnection(c->id, req.five_tuple);
}

void Server::onConnectionClosed(ConnectionId id) {
  const auto owner = connection_owners_.find(id);
  if (owner == connection_owners_.end()) return;
  Allocation* a = allocations_.find(owner->second);
  if (a == nullptr) {
    connection_owners_.erase(owner);
    return;
  }
  if (const PeerConnection* c = a->findConnection(id)) {
    countFor(a->listener);
    countConnection(*a, *c);  // its last bytes
  }
  forgetConnection(*a, id);
}

void Server::countConnectionTraffic() {
  for (const auto& [id, owner] : connection_owners_) {
    Allocation* a = allocations_.find(owner);
    const PeerConnection* c = a != nullptr ? a->findConnection(id) : nullptr;
    if (c == nullptr || c->state != PeerConnection::State::kBound) continue;
    countFor(a->listener);
    countConnection(*a, *c);
  }
}

void Server::countConnection(Allocation& a, const PeerConnection& c) {
  const ConnectionTraffic t = relays_.takeConnectionTraffic(c.id);
  if (t.to_peer == 0 && t.to_client == 0) return;
  // A byte stream has no packets: bytes only, into the same counters as relayed datagrams.
  a.bytes_to_peers += t.to_peer;
  a.bytes_to_client += t.to_client;
  cur_->client_bytes_relayed += t.to_peer;
  cur_->peer_bytes_relayed += t.to_client;
  const ListenerPolicy* policy = config_->listener(a.listener);
  const PeerRange* range = policy != nullptr ? policy->admittingTcp(c.peer) : nullptr;
  const ClusterId cluster = range != nullptr ? range->cluster : ClusterId{0};
  countCluster(cluster, true, t.to_peer, 0);
  countCluster(cluster, false, t.to_client, 0);
}

uint64_t Server::connectionAllowance(AllocationId allocation, bool to_peer, MonoTime now) {
  const ServerConfig& c = *config_;
  if (c.allocation_bytes_per_second == 0 && c.listener_bytes_per_second == 0) return UINT64_MAX;
  Allocation* a = allocations_.find(allocation);
  if (a == nullptr) return UINT64_MAX;  // its connections are closing
  uint64_t allowed = UINT64_MAX;
  if (c.allocation_bytes_per_second != 0) {
    allowed = (to_peer ? a->budget_to_peers : a->budget_to_client)
                  .available(now, c.allocation_bytes_per_second);
  }
  if (c.listener_bytes_per_second != 0 && a->listener < listener_budget_.size()) {
    allowed = std::min(allowed, listener_budget_[a->listener][to_peer ? 0 : 1].available(
                                    now, c.listener_bytes_per_second));
  }
  if (allowed == 0) {
    countFor(a->listener);
    ++cur_->connection_reads_held;
  }
  return allowed;
}

void Server::spendConnectionAllowance(AllocationId allocation, bool to_peer, uint64_t bytes) {
  const ServerConfig& c = *config_;
  if (c.allocation_bytes_per_second == 0 && c.listener_bytes_per_second == 0) return;
  Allocation* a = allocations_.find(allocation);
  if (a == nullptr) return;
  if (c.allocation_bytes_per_second != 0) {
    (to_peer ? a->budget_to_peers : a->budget_to_client).spend(bytes);
  }
  if (c.listener_bytes_per_second != 0 && a->listener < listener_budget_.size()) {
    listener_budget_[a->listener][to_peer ? 0 : 1].spend(bytes);
  }
}

void Server::expireConnections(Allocation& allocation, MonoTime now) {
  std::erase_if(allocation.connections, [&](const PeerConnection& c) {
    if (c.state != PeerConnection::State::kPendingBind || c.deadline > now) return false;
    ++cur_->peer_connections_unbound;
    relays_.closeConnection(c.id);
    connection_owners_.erase(c.id);
    return true;
  });
}

void Server::forgetConnection(Allocation& allocation, ConnectionId id) {
  connection_owners_.erase(id);
  std::erase_if(allocation.connections, [id](const PeerConnection& c) { return c.id == id; });
}

ConnectionId Server::nextConnectionId() {
  // 24 bits of sequence under the owner's prefix, skipping 0 and ids still in use; a worker
  // would need 16 million live connections for this to loop.
  for (;;) {
    next_connection_ = (next_connection_ + 1) & 0xFFFFFF;
    if (next_connection_ == 0) continue;
    const ConnectionId id = connection_prefix_ | next_connection_;
    if (!connection_owners_.contains(id)) return id;
  }
}

}  // namespace kturn::turn
