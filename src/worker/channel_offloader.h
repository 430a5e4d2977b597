// ChannelOffloader: one worker's turn::ChannelOffload over the kernel fast path's maps
// (xdp::OffloadMaps, bpf/kturn_offload.h). For each channel the core offers it writes two
// entries, client -> peer and peer -> client, each with a counter slot of the worker's own range,
// and erases them when the core withdraws the channel.
//
// The kernel counts what it relays; collect() reads the counters (memory loads, no system call)
// and hands the growth since the last read to the core, which counts it like its own relaying.
// Runs on its worker's thread only. Never per packet: offers, withdrawals and one collect() per
// worker tick.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kturn/function_ref.h"
#include "turn/channel_offload.h"
#include "turn/server_stats.h"
#include "xdp/offload_maps.h"

namespace kturn::worker {

class ChannelOffloader final : public turn::ChannelOffload {
 public:
  // Uses counter slots [first_slot, first_slot + slots) of `maps`, which must outlive it.
  ChannelOffloader(xdp::OffloadMaps& maps, uint32_t first_slot, uint32_t slots);
  // Erases the entries still held.
  ~ChannelOffloader() override;
  ChannelOffloader(const ChannelOffloader&) = delete;
  ChannelOffloader& operator=(const ChannelOffloader&) = delete;

  bool offer(const turn::Allocation& allocation, const turn::ChannelBinding& channel,
             turn::MonoTime until) override;
  turn::OffloadedTraffic withdraw(const turn::Allocation& allocation,
                                  const turn::ChannelBinding& channel) override;

  // Calls `fn` for each channel the kernel relayed something for since the last call.
  using CollectFn =
      FunctionRef<void(const FiveTuple&, uint16_t channel, const turn::OffloadedTraffic&)>;
  void collect(CollectFn fn);

  // Channels in the kernel now.
  size_t size() const { return entries_.size(); }
  // Client-side traffic the kernel relayed, per listener (ListenerTraffic's share): datagrams
  // and bytes as they crossed the listener, ChannelData headers included.
  const std::vector<turn::TrafficCounters>& listenerTraffic() const { return by_listener_; }

 private:
  struct Key {
    turn::AllocationId allocation;
    uint16_t channel;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    kturn_channel_key to_peer_key;
    kturn_peer_key to_client_key;
    FiveTuple five_tuple;
    turn::ListenerId listener;
    uint32_t slot;  // client -> peer; slot + 1: peer -> client
    uint64_t expires_ns;
    kturn_counter seen_to_peer;
    kturn_counter seen_to_client;
  };

  // What the counters of `e` grew by since last seen; remembers the new values.
  turn::OffloadedTraffic growth(Entry& e);
  void countListener(const Entry& e, const turn::OffloadedTraffic& t);

  // Counts of channels the kernel dropped from its maps on a failed update, for the next collect().
  struct Leftover {
    FiveTuple five_tuple;
    uint16_t channel;
    turn::OffloadedTraffic traffic;
  };

  xdp::OffloadMaps& maps_;
  std::vector<Leftover> leftovers_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::vector<uint32_t> free_slots_;  // pairs: even offsets from the range's start
  std::vector<turn::TrafficCounters> by_listener_;
};

}  // namespace kturn::worker
