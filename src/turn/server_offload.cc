// The TURN core's side of the kernel fast path (channel_offload.h): which channels the kernel
// may relay, until when, and counting what it relayed as if the core had.
#include <algorithm>

#include "turn/server.h"

namespace kturn::turn {

void Server::setChannelOffload(ChannelOffload* offload) {
  if (offload == offload_) return;
  if (offload_ != nullptr) allocations_.forEach([&](Allocation& a) { withdrawChannels(a); });
  offload_ = offload;
  if (offload_ != nullptr) allocations_.forEach([&](Allocation& a) { offerChannels(a); });
}

bool Server::offloadable(Allocation& a, ChannelBinding& channel) {
  if (offload_ == nullptr || a.relay_protocol != TransportProtocol::kUdp ||
      a.five_tuple.protocol != TransportProtocol::kUdp) {
    return false;
  }
  const ListenerPolicy* listener = config_->listener(a.listener);
  if (listener == nullptr || !listener->offloadable) return false;
  // A cap is enforced per datagram, which the kernel does not do.
  if (caps_.enabled()) return false;
  // The program keeps the IP header's size: client and peer of one family.
  if (channel.peer.family() != a.five_tuple.client.family()) return false;
  return policy_.admits(a.listener, channel.verdict, channel.peer);
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
  if (channel.offloaded && !was) ++statsOf(a).channels_offloaded;
  if (!channel.offloaded && !was) ++statsOf(a).channels_offload_refused;
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
  countOffloaded(*a, *channel, traffic);
}

void Server::countOffloaded(Allocation& a, const ChannelBinding& channel,
                            const OffloadedTraffic& t) {
  if (t.empty()) return;
  // Counted as the core's own relaying is (data_path.cc), plus the offload share.
  ServerStats& stats = statsOf(a);
  countRelayed(stats, a, channel.verdict.cluster, true, t.bytes_to_peer, t.packets_to_peer);
  countRelayed(stats, a, channel.verdict.cluster, false, t.bytes_to_client, t.packets_to_client);
  stats.offload_packets_to_peer += t.packets_to_peer;
  stats.offload_bytes_to_peer += t.bytes_to_peer;
  stats.offload_packets_to_client += t.packets_to_client;
  stats.offload_bytes_to_client += t.bytes_to_client;
}

}  // namespace kturn::turn
