#include "worker/channel_offloader.h"

#include <arpa/inet.h>

#include <chrono>
#include <cstring>

#include "xdp/mapped_address.h"

namespace kturn::worker {
namespace {

using xdp::putMappedAddress;

// steady_clock is CLOCK_MONOTONIC on Linux, the clock bpf_ktime_get_ns() reads.
uint64_t monotonicNs(turn::MonoTime t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  return ns.count() > 0 ? static_cast<uint64_t>(ns.count()) : 0;
}

}  // namespace

size_t ChannelOffloader::KeyHash::operator()(const Key& k) const {
  uint64_t h = (uint64_t{k.allocation.index} << 32 | k.allocation.generation) * 0x9E3779B97F4A7C15u;
  return static_cast<size_t>(h ^ (h >> 29) ^ k.channel);
}

ChannelOffloader::ChannelOffloader(xdp::OffloadMaps& maps, uint32_t first_slot, uint32_t slots)
    : maps_(maps) {
  free_slots_.reserve(slots / 2);
  // Handed out from the front of the range: the back of the vector is the next one.
  for (uint32_t i = slots / 2; i > 0; --i) free_slots_.push_back(first_slot + 2 * (i - 1));
}

ChannelOffloader::~ChannelOffloader() {
  for (auto& [key, e] : entries_) {
    maps_.eraseChannel(e.to_peer_key);
    maps_.erasePeer(e.to_client_key);
  }
}

bool ChannelOffloader::offer(const turn::Allocation& a, const turn::ChannelBinding& channel,
                             turn::MonoTime until) {
  const Key key{a.id, channel.number};
  auto it = entries_.find(key);
  const bool fresh = it == entries_.end();
  if (fresh && free_slots_.empty()) return false;
  // A config change offers every channel again: one that did not move costs no system call.
  if (!fresh && it->second.expires_ns == monotonicNs(until)) return true;

  // The relayed address of the peer's family (a dual allocation has two).
  const TransportAddress& relayed =
      a.relayed.family() == channel.peer.family() || !a.relayed_additional ? a.relayed
                                                                           : *a.relayed_additional;
  Entry e{};
  if (!fresh) e = it->second;
  if (fresh) {
    e.slot = free_slots_.back();
    e.seen_to_peer = maps_.readCounter(e.slot);
    e.seen_to_client = maps_.readCounter(e.slot + 1);
    e.five_tuple = a.five_tuple;
    e.listener = a.listener;
  }
  kturn_channel_key& ck = e.to_peer_key;
  putMappedAddress(ck.client_addr, a.five_tuple.client.ip);
  putMappedAddress(ck.server_addr, a.five_tuple.server.ip);
  ck.client_port = htons(a.five_tuple.client.port);
  ck.server_port = htons(a.five_tuple.server.port);
  ck.channel = htons(channel.number);
  kturn_channel_value cv{};
  putMappedAddress(cv.relay_addr, relayed.ip);
  putMappedAddress(cv.peer_addr, channel.peer.ip);
  cv.relay_port = htons(relayed.port);
  cv.peer_port = htons(channel.peer.port);
  cv.counter = e.slot;
  cv.expires_ns = monotonicNs(until);
  e.expires_ns = cv.expires_ns;

  kturn_peer_key& pk = e.to_client_key;
  putMappedAddress(pk.peer_addr, channel.peer.ip);
  putMappedAddress(pk.relay_addr, relayed.ip);
  pk.peer_port = htons(channel.peer.port);
  pk.relay_port = htons(relayed.port);
  kturn_peer_value pv{};
  putMappedAddress(pv.client_addr, a.five_tuple.client.ip);
  putMappedAddress(pv.server_addr, a.five_tuple.server.ip);
  pv.client_port = htons(a.five_tuple.client.port);
  pv.server_port = htons(a.five_tuple.server.port);
  pv.channel = htons(channel.number);
  pv.counter = e.slot + 1;
  pv.expires_ns = cv.expires_ns;

  if (!maps_.putChannel(ck, cv) || !maps_.putPeer(pk, pv)) {
    maps_.eraseChannel(ck);
    maps_.erasePeer(pk);
    if (!fresh) {
      // The kernel no longer holds it: the core gets what it relayed at the next collect().
      turn::OffloadedTraffic t = growth(it->second);
      countListener(it->second, t);
      if (!t.empty()) leftovers_.push_back({it->second.five_tuple, channel.number, t});
      free_slots_.push_back(it->second.slot);
      entries_.erase(it);
    }
    return false;
  }
  if (fresh) {
    free_slots_.pop_back();
    entries_.emplace(key, e);
  } else {
    it->second = e;
  }
  return true;
}

turn::OffloadedTraffic ChannelOffloader::withdraw(const turn::Allocation& a,
                                                  const turn::ChannelBinding& channel) {
  auto it = entries_.find(Key{a.id, channel.number});
  if (it == entries_.end()) return {};
  Entry& e = it->second;
  maps_.eraseChannel(e.to_peer_key);
  maps_.erasePeer(e.to_client_key);
  // Read after the erase: a packet the program is relaying right now may still add to the
  // counter after this read; that one is lost to the metrics, never double-counted.
  turn::OffloadedTraffic t = growth(e);
  countListener(e, t);
  free_slots_.push_back(e.slot);
  entries_.erase(it);
  return t;
}

void ChannelOffloader::collect(CollectFn fn) {
  for (const Leftover& l : leftovers_) fn(l.five_tuple, l.channel, l.traffic);
  leftovers_.clear();
  for (auto& [key, e] : entries_) {
    turn::OffloadedTraffic t = growth(e);
    if (t.empty()) continue;
    countListener(e, t);
    fn(e.five_tuple, key.channel, t);
  }
}

turn::OffloadedTraffic ChannelOffloader::growth(Entry& e) {
  const kturn_counter to_peer = maps_.readCounter(e.slot);
  const kturn_counter to_client = maps_.readCounter(e.slot + 1);
  turn::OffloadedTraffic t{
      .packets_to_peer = to_peer.packets - e.seen_to_peer.packets,
      .bytes_to_peer = to_peer.bytes - e.seen_to_peer.bytes,
      .packets_to_client = to_client.packets - e.seen_to_client.packets,
      .bytes_to_client = to_client.bytes - e.seen_to_client.bytes,
  };
  e.seen_to_peer = to_peer;
  e.seen_to_client = to_client;
  return t;
}

void ChannelOffloader::countListener(const Entry& e, const turn::OffloadedTraffic& t) {
  if (t.empty()) return;
  if (e.listener >= by_listener_.size()) by_listener_.resize(e.listener + 1);
  turn::TrafficCounters& c = by_listener_[e.listener];
  constexpr uint64_t kHeader = 4;  // ChannelData header (RFC 8656 §12.4), no padding over UDP
  c.rx_packets += t.packets_to_peer;
  c.rx_bytes += t.bytes_to_peer + kHeader * t.packets_to_peer;
  c.tx_packets += t.packets_to_client;
  c.tx_bytes += t.bytes_to_client + kHeader * t.packets_to_client;
}

}  // namespace kturn::worker
