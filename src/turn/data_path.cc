// The core's data path: Send indications and ChannelData from clients (RFC 8656 §10.2, §12.5) and
// datagrams from peers (§10.3, §12.6), and the one place relayed traffic is counted. Per packet:
// a hash lookup or an array index, short scans of the allocation's channels and permissions, a
// cached policy verdict (peer_policy.h), the caps (bandwidth_caps.h) — no allocation, no copy, no
// log.
#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "stun/data_indication.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::countRelayed(ServerStats& stats, Allocation& a, ClusterId cluster, bool to_peer,
                          uint64_t bytes, uint64_t packets) {
  if (cluster >= cluster_stats_.size()) cluster_stats_.resize(cluster + 1);
  TrafficCounters& c = cluster_stats_[cluster];
  if (to_peer) {
    stats.client_packets_relayed += packets;
    stats.client_bytes_relayed += bytes;
    c.tx_packets += packets;
    c.tx_bytes += bytes;
    a.packets_to_peers += packets;
    a.bytes_to_peers += bytes;
  } else {
    stats.peer_packets_relayed += packets;
    stats.peer_bytes_relayed += bytes;
    c.rx_packets += packets;
    c.rx_bytes += bytes;
    a.packets_to_client += packets;
    a.bytes_to_client += bytes;
  }
}

bool Server::underCaps(ServerStats& stats, Allocation& a, bool to_peer, size_t bytes,
                       MonoTime now) {
  using Direction = BandwidthCaps::Direction;
  if (!caps_.enabled() ||
      caps_.take(a, to_peer ? Direction::kToPeers : Direction::kToClient, bytes, now)) {
    return true;
  }
  ++stats.drop_over_bandwidth;
  return false;
}

void Server::handleSend(ServerStats& stats, const FiveTuple& five_tuple,
                        const stun::MessageView& message, const Now& now, Actions& out) {
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) {
    ++stats.drop_no_allocation;
    return;
  }
  if (a->relay_protocol != TransportProtocol::kUdp) {
    ++stats.drop_ignored;  // a TCP allocation relays over peer connections only (RFC 6062)
    return;
  }
  const auto peer_attr = message.value(stun::attr::kXorPeerAddress);
  const auto data = message.value(stun::attr::kData);
  const auto peer = peer_attr ? stun::decodeXorAddress(*peer_attr, message.xorPad()) : std::nullopt;
  if (!peer || !data || !a->relays(peer->family())) {
    ++stats.drop_malformed;
    return;
  }
  Permission* p = a->findPermission(peer->ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++stats.drop_no_permission;
    return;
  }
  ClusterId cluster = 0;
  if (!policy_.admitsPacket(a->listener, *p, *peer, cluster)) {
    ++stats.drop_peer_denied;
    return;
  }
  if (!underCaps(stats, *a, true, data->size(), now.mono)) return;
  countRelayed(stats, *a, cluster, true, data->size());
  out.to_peers.push_back({a->id, *peer, *data});
}

void Server::onChannelData(ServerStats& stats, const FiveTuple& five_tuple,
                           std::span<const uint8_t> packet, const Now& now, Actions& out) {
  auto cd = stun::parseChannelData(packet);
  if (!cd) {
    ++stats.drop_malformed;
    return;
  }
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) {
    ++stats.drop_no_allocation;
    return;
  }
  ChannelBinding* channel = a->findChannel(cd->channel);
  if (channel == nullptr || channel->expires <= now.mono) {
    ++stats.drop_unknown_channel;
    return;
  }
  const Permission* p = a->findPermission(channel->peer.ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++stats.drop_no_permission;
    return;
  }
  if (!policy_.admits(a->listener, channel->verdict, channel->peer)) {
    ++stats.drop_peer_denied;
    return;
  }
  if (!underCaps(stats, *a, true, cd->data.size(), now.mono)) return;
  countRelayed(stats, *a, channel->verdict.cluster, true, cd->data.size());
  out.to_peers.push_back({a->id, channel->peer, cd->data});
}

void Server::onPeerPacket(AllocationId id, const TransportAddress& peer, PeerPacket packet,
                          const Now& now, Actions& out) {
  Allocation* a = allocations_.find(id);
  if (a == nullptr) {
    ++stats_[0].drop_no_allocation;  // slot 0: peer packets for no allocation
    return;
  }
  ServerStats& stats = statsOf(*a);
  Permission* p = a->findPermission(peer.ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++stats.drop_no_permission;
    return;
  }
  uint8_t* payload = packet.buffer.data() + packet.offset;
  const size_t length = packet.length;
  if (length > 0xFFFF - 64 || packet.offset < PeerPacket::kHeadroom ||
      packet.buffer.size() < packet.offset + length + PeerPacket::kTailroom) {
    ++stats.drop_malformed;
    return;
  }

  if (ChannelBinding* channel = a->findChannel(peer);
      channel != nullptr && channel->expires > now.mono) {
    if (!policy_.admits(a->listener, channel->verdict, peer)) {
      ++stats.drop_peer_denied;
      return;
    }
    if (!underCaps(stats, *a, false, length, now.mono)) return;
    // Over UDP ChannelData needs no padding; over TCP/TLS it is padded to four bytes (RFC 8656
    // §12.5), written into the tailroom.
    uint8_t* start = payload - stun::kChannelDataHeaderSize;
    stun::writeChannelDataHeader(start, channel->number, static_cast<uint16_t>(length));
    size_t frame = length + stun::kChannelDataHeaderSize;
    if (a->five_tuple.protocol == TransportProtocol::kTcp) {
      const size_t padded = (length + 3) & ~size_t{3};
      std::fill(payload + length, payload + padded, uint8_t{0});
      frame = padded + stun::kChannelDataHeaderSize;
    }
    countRelayed(stats, *a, channel->verdict.cluster, false, length);
    out.to_clients.push_back(
        {a->listener, a->five_tuple.client, a->five_tuple.server.ip, {start, frame}});
    return;
  }
  ClusterId cluster = 0;
  if (!policy_.admitsPacket(a->listener, *p, peer, cluster)) {
    ++stats.drop_peer_denied;
    return;
  }
  if (!underCaps(stats, *a, false, length, now.mono)) return;

  // A Data indication, built in place around the payload (PeerPacket::kHeadroom is an IPv6
  // peer's headroom).
  const std::span<uint8_t> indication =
      stun::writeDataIndication(payload, length, peer, nextTransactionId());
  countRelayed(stats, *a, cluster, false, length);
  out.to_clients.push_back(
      {a->listener, a->five_tuple.client, a->five_tuple.server.ip, indication});
}

}  // namespace kturn::turn
