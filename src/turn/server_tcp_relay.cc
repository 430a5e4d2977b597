// The TURN core's side of the peer connections of TCP allocations (RFC 6062) after the Connect
// or the peer's accept: answering the Connect, offering a ConnectionAttempt, counting what the
// connections relayed and pacing them under the bandwidth caps. The index of connections is
// peer_connections.h; the handlers of Connect and ConnectionBind are in handlers/connect.cc.
#include "stun/attributes.h"
#include "turn/server.h"

namespace kturn::turn {
namespace {

void addConnectionId(stun::MessageBuilder& b, ConnectionId id) {
  b.addUint32(stun::attr::kConnectionId, id);
}

BandwidthCaps::Direction direction(bool to_peer) {
  return to_peer ? BandwidthCaps::Direction::kToPeers : BandwidthCaps::Direction::kToClient;
}

}  // namespace

void Server::onPeerConnected(ConnectionId id, bool connected, const Now& now, Actions& out) {
  const PeerConnections::Held held = connections_.find(id, allocations_);
  Allocation* a = held.allocation;
  PeerConnection* c = held.connection;
  if (c == nullptr || c->state != PeerConnection::State::kConnecting) return;
  ServerStats& stats = statsOf(*a);
  const Reply reply{
      .listener = a->listener,
      .five_tuple = a->five_tuple,
      .method_bits = static_cast<uint16_t>(stun::Method::kConnect),
      .cls = connected ? stun::MessageClass::kSuccessResponse : stun::MessageClass::kErrorResponse,
      .transaction = c->connect_transaction,
      .key = &a->key,
      .sha256 = c->connect_sha256,
      .fingerprint = c->connect_fingerprint};
  if (!connected) {
    ++stats.peer_connections_failed;
    ++stats.error_responses;
    send(reply, stats, out,
         [](stun::MessageBuilder& b) { b.addErrorCode(stun::error::kConnectionTimeoutOrFailure); });
    connections_.forget(*a, id);  // `c` and `reply.transaction` are gone from here on
    return;
  }
  ++stats.peer_connections_connected;
  c->state = PeerConnection::State::kPendingBind;
  c->deadline = now.mono + PeerConnections::kBindTimeout;
  send(reply, stats, out, [id](stun::MessageBuilder& b) { addConnectionId(b, id); });
  rearm(*a);
}

ConnectionId Server::onPeerConnectionAccepted(AllocationId allocation, const TransportAddress& peer,
                                              const Now& now, Actions& out) {
  Allocation* a = allocations_.find(allocation);
  if (a == nullptr || a->relay_protocol != TransportProtocol::kTcp) return 0;
  ServerStats& stats = statsOf(*a);
  // RFC 6062 §5.3: only a peer with a permission, and (kturn) only from a TCP cluster the
  // allocation's listener routes to, since a permission may predate a config change.
  const Permission* permission = a->findPermission(peer.ip);
  if (permission == nullptr || permission->expires <= now.mono ||
      policy_.admittingTcp(a->listener, peer, /*ip_only=*/true) == nullptr ||
      PeerConnections::full(*a)) {
    ++stats.peer_connections_refused;
    return 0;
  }
  PeerConnection c;
  c.id = connections_.nextId();
  c.peer = peer;
  c.state = PeerConnection::State::kPendingBind;
  c.deadline = now.mono + PeerConnections::kBindTimeout;
  connections_.add(*a, c);
  ++stats.peer_connections_accepted;
  rearm(*a);

  const stun::TransactionId transaction = nextTransactionId();
  send({.listener = a->listener,
        .five_tuple = a->five_tuple,
        .method_bits = static_cast<uint16_t>(stun::Method::kConnectionAttempt),
        .cls = stun::MessageClass::kIndication,
        .transaction = transaction,
        .key = nullptr,
        .sha256 = false,
        .fingerprint = false},
       stats, out, [&](stun::MessageBuilder& b) {
         b.addXorAddress(stun::attr::kXorPeerAddress, peer);
         addConnectionId(b, c.id);
       });
  return c.id;
}

void Server::onConnectionClosed(ConnectionId id) {
  const PeerConnections::Held held = connections_.find(id, allocations_);
  if (held.allocation == nullptr) {
    connections_.forget(id);
    return;
  }
  if (held.connection != nullptr)
    countConnection(*held.allocation, *held.connection);  // last bytes
  connections_.forget(*held.allocation, id);
}

void Server::countConnectionTraffic() {
  connections_.forEachBound(
      allocations_, [this](Allocation& a, const PeerConnection& c) { countConnection(a, c); });
}

void Server::countConnection(Allocation& a, const PeerConnection& c) {
  const ConnectionTraffic t = relays_.takeConnectionTraffic(c.id);
  if (t.to_peer == 0 && t.to_client == 0) return;
  // A byte stream has no packets: bytes only, into the same counters as relayed datagrams.
  const PeerRange* range = policy_.admittingTcp(a.listener, c.peer);
  const ClusterId cluster = range != nullptr ? range->cluster : ClusterId{0};
  ServerStats& stats = statsOf(a);
  countRelayed(stats, a, cluster, true, t.to_peer, 0);
  countRelayed(stats, a, cluster, false, t.to_client, 0);
}

uint64_t Server::connectionAllowance(AllocationId allocation, bool to_peer, MonoTime now) {
  if (!caps_.enabled()) return UINT64_MAX;
  Allocation* a = allocations_.find(allocation);
  if (a == nullptr) return UINT64_MAX;  // its connections are closing
  const uint64_t allowed = caps_.available(*a, direction(to_peer), now);
  if (allowed == 0) ++statsOf(*a).connection_reads_held;
  return allowed;
}

void Server::spendConnectionAllowance(AllocationId allocation, bool to_peer, uint64_t bytes) {
  if (!caps_.enabled()) return;
  if (Allocation* a = allocations_.find(allocation)) caps_.spend(*a, direction(to_peer), bytes);
}

}  // namespace kturn::turn
