// OffloadMaps: the kernel fast path's maps as kturnd's workers see them (bpf/kturn_offload.h).
// An interface so that the daemon and its tests can run without BPF (a fake in tests, KernelMaps
// over the real maps in kturnd), the way Katran reaches its kernel through an injected adapter.
//
// Called when a channel is bound, refreshed or withdrawn and when the worker folds counters into
// its metrics (once a second): never per packet. Thread-safe in KernelMaps (an update is one bpf()
// system call, a counter read is a load from the mapped array); workers use disjoint counter
// slots.
#pragma once

#include <cstdint>

#include "kturn_offload.h"

namespace kturn::xdp {

class OffloadMaps {
 public:
  virtual ~OffloadMaps() = default;
  // Inserts or replaces an entry; false when the map is full or the kernel refused.
  virtual bool putChannel(const kturn_channel_key& key, const kturn_channel_value& value) = 0;
  virtual bool putPeer(const kturn_peer_key& key, const kturn_peer_value& value) = 0;
  // Removes an entry; absent entries are ignored.
  virtual void eraseChannel(const kturn_channel_key& key) = 0;
  virtual void erasePeer(const kturn_peer_key& key) = 0;
  // Drops every datagram of `key`'s source to its port in the kernel until value.expires_ns (a
  // source the auth throttle caught); false when the kernel refused.
  virtual bool putBlock(const kturn_block_key& key, const kturn_block_value& value) = 0;
  // The running totals of a counter slot (never reset: callers keep the value they last read).
  virtual kturn_counter readCounter(uint32_t slot) const = 0;
  // Slots [0, counterSlots()).
  virtual uint32_t counterSlots() const = 0;
};

}  // namespace kturn::xdp
