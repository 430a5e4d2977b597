// The data path: Send indications and ChannelData from clients (RFC 8656 §10.2, §12.5) and
// datagrams from peers (§10.3, §12.6). Per packet: a hash lookup or an array index, short scans
// of the allocation's channels and permissions, a cached policy verdict — no allocation, no
// copy, no log.
#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/data_indication.h"
#include "turn/server.h"

namespace kturn::turn {

void Server::handleSend(const FiveTuple& five_tuple, const stun::MessageView& message,
                        const Now& now, Actions& out) {
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) {
    ++cur_->drop_no_allocation;
    return;
  }
  if (a->relay_protocol != TransportProtocol::kUdp) {
    ++cur_->drop_ignored;  // a TCP allocation relays over peer connections only (RFC 6062)
    return;
  }
  const auto peer_attr = message.value(stun::attr::kXorPeerAddress);
  const auto data = message.value(stun::attr::kData);
  const auto peer = peer_attr ? stun::decodeXorAddress(*peer_attr, message.xorPad()) : std::nullopt;
  if (!peer || !data || !a->relays(peer->family())) {
    ++cur_->drop_malformed;
    return;
  }
  Permission* p = a->findPermission(peer->ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++cur_->drop_no_permission;
    return;
  }
  ClusterId cluster = 0;
  if (!admitsPacket(*a, *p, *peer, cluster)) {
    ++cur_->drop_peer_denied;
    return;
  }
  if (!underCaps(*a, true, data->size(), now.mono)) return;
  countCluster(cluster, true, data->size());
  ++cur_->client_packets_relayed;
  cur_->client_bytes_relayed += data->size();
  ++a->packets_to_peers;
  a->bytes_to_peers += data->size();
  out.to_peers.push_back({a->id, *peer, *data});
}

void Server::onChannelData(const FiveTuple& five_tuple, std::span<const uint8_t> packet,
                           const Now& now, Actions& out) {
  auto cd = stun::parseChannelData(packet);
  if (!cd) {
    ++cur_->drop_malformed;
    return;
  }
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) {
    ++cur_->drop_no_allocation;
    return;
  }
  ChannelBinding* channel = a->findChannel(cd->channel);
  if (channel == nullptr || channel->expires <= now.mono) {
    ++cur_->drop_unknown_channel;
    return;
  }
  const Permission* p = a->findPermission(channel->peer.ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++cur_->drop_no_permission;
    return;
  }
  if (!admits(*a, channel->verdict, channel->peer)) {
    ++cur_->drop_peer_denied;
    return;
  }
  if (!underCaps(*a, true, cd->data.size(), now.mono)) return;
  countCluster(channel->verdict.cluster, true, cd->data.size());
  ++cur_->client_packets_relayed;
  cur_->client_bytes_relayed += cd->data.size();
  ++a->packets_to_peers;
  a->bytes_to_peers += cd->data.size();
  out.to_peers.push_back({a->id, channel->peer, cd->data});
}

void Server::onPeerPacket(AllocationId id, const TransportAddress& peer, PeerPacket packet,
                          const Now& now, Actions& out) {
  Allocation* a = allocations_.find(id);
  countFor(a != nullptr ? a->listener : 0);
  if (a == nullptr) {
    ++cur_->drop_no_allocation;
    return;
  }
  Permission* p = a->findPermission(peer.ip);
  if (p == nullptr || p->expires <= now.mono) {
    ++cur_->drop_no_permission;
    return;
  }
  uint8_t* payload = packet.buffer.data() + packet.offset;
  const size_t length = packet.length;
  if (length > 0xFFFF - 64 || packet.offset < PeerPacket::kHeadroom ||
      packet.buffer.size() < packet.offset + length + PeerPacket::kTailroom) {
    ++cur_->drop_malformed;
    return;
  }

  if (ChannelBinding* channel = a->findChannel(peer);
      channel != nullptr && channel->expires > now.mono) {
    if (!admits(*a, channel->verdict, peer)) {
      ++cur_->drop_peer_denied;
      return;
    }
    if (!underCaps(*a, false, length, now.mono)) return;
    countCluster(channel->verdict.cluster, false, length);
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
    ++cur_->peer_packets_relayed;
    cur_->peer_bytes_relayed += length;
    ++a->packets_to_client;
    a->bytes_to_client += length;
    out.to_clients.push_back({a->listener, a->five_tuple.client, {start, frame}});
    return;
  }
  ClusterId cluster = 0;
  if (!admitsPacket(*a, *p, peer, cluster)) {
    ++cur_->drop_peer_denied;
    return;
  }
  if (!underCaps(*a, false, length, now.mono)) return;
  countCluster(cluster, false, length);

  // A Data indication, built in place around the payload (PeerPacket::kHeadroom is an IPv6
  // peer's headroom).
  const std::span<uint8_t> indication =
      stun::writeDataIndication(payload, length, peer, nextTransactionId());
  ++cur_->peer_packets_relayed;
  cur_->peer_bytes_relayed += length;
  ++a->packets_to_client;
  a->bytes_to_client += length;
  out.to_clients.push_back({a->listener, a->five_tuple.client, indication});
}

}  // namespace kturn::turn
