// The TURN core's side of the kernel fast path (channel_offload.h): which channels the kernel
// may relay, until when, and counting what it relayed as if the core had.
#include <algorithm>

#include "turn/server.h"

namespace kturn::turn {

void Server::setChannelOffload(ChannelOffload* offload) {
  if (offload == offload_) return;
  if (offload_ != nullptr) {
    allocations_.forEach([&](Allocation& a) {
      countFor(a.listener);
      withdrawChannels(a);
    });
  }
  offload_ = offload;
  if (offload_ != nullptr) {
    allocations_.forEach([&](Allocation& a) {
      countFor(a.listener);
      offerChannels(a);
    });
  }
}

bool Server::offloadable(Allocation& a, ChannelBinding& channel) {
  if (offload_ == nullptr || a.relay_protocol != TransportProtocol::kUdp ||
      a.five_tuple.protocol != TransportProtocol::kUdp) {
    return false;
  }
  const ListenerPolicy* listener = config_->listener(a.listener);
  if (listener == nullptr || !listener->offloadable) return false;
  // A cap is enforced per datagram, which the kernel does not do.
  if (config_->allocation_bytes_per_second != 0 || config_->listener_bytes_per_second != 0) {
    return false;
  }
  // The program keeps the IP header's size: client and peer of one family.
  if (channel.peer.family() != a.five_tuple.client.family()) return false;
  return admits(a, channel.verdict, channel.peer);
}

void Server::offerChannel(Allocation& a, ChannelBinding& channel) {
  const Permission* permission = a.findPermission(channel.peer.ip);
  if (permission == nullptr || !offloadable(a, channel)) {
    withdrawChannel(a, channel);
    return;
  }
  const MonoTime until = std::min({channel.expires, permission->expires, a.expires});
  const bool was = channel.offloaded;
  channel.offloaded = offload_->offer(a, channel, until);
  if (channel.offloaded && !was) ++cur_->channels_offloaded;
  if (!channel.offloaded && !was) ++cur_->channels_offload_refused;
}

void Server::offerChannels(Allocation& a) {
  for (ChannelBinding& c : a.channels) offerChannel(a, c);
}

void Server::withdrawChannel(Allocation& a, ChannelBinding& channel) {
  if (!channel.offloaded) return;
  channel.offloaded = false;
  countOffloaded(a, channel, offload_->withdraw(a, channel));
}

void Server::withdrawChannels(Allocation& a) {
  for (ChannelBinding& c : a.channels) withdrawChannel(a, c);
}

void Server::onOffloadedTraffic(const FiveTuple& five_tuple, uint16_t number,
                                const OffloadedTraffic& traffic) {
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr || traffic.empty()) return;
  const ChannelBinding* channel = a->findChannel(number);
  if (channel == nullptr) return;
  countFor(a->listener);
  countOffloaded(*a, *channel, traffic);
}

void Server::countOffloaded(Allocation& a, const ChannelBinding& channel,
                            const OffloadedTraffic& t) {
  if (t.empty()) return;
  // Into the same counters as the core's own relaying (relay.cc), plus the offload share.
  countCluster(channel.verdict.cluster, true, t.bytes_to_peer, t.packets_to_peer);
  countCluster(channel.verdict.cluster, false, t.bytes_to_client, t.packets_to_client);
  cur_->client_packets_relayed += t.packets_to_peer;
  cur_->client_bytes_relayed += t.bytes_to_peer;
  cur_->peer_packets_relayed += t.packets_to_client;
  cur_->peer_bytes_relayed += t.bytes_to_client;
  cur_->offload_packets_to_peer += t.packets_to_peer;
  cur_->offload_bytes_to_peer += t.bytes_to_peer;
  cur_->offload_packets_to_client += t.packets_to_client;
  cur_->offload_bytes_to_client += t.bytes_to_client;
  a.packets_to_peers += t.packets_to_peer;
  a.bytes_to_peers += t.bytes_to_peer;
  a.packets_to_client += t.packets_to_client;
  a.bytes_to_client += t.bytes_to_client;
}

}  // namespace kturn::turn
