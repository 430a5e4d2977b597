// The port through which the TURN core hands bound channels to a kernel fast path (kturnd's eBPF
// program, bpf/kturn_offload.bpf.c) and takes them back. The core decides which channels qualify
// and until when; the daemon implements the port over the kernel's maps, tests with a fake.
//
// A channel qualifies when its ChannelData can be relayed exactly as the core would: a UDP
// allocation of a TURN-UDP client, the peer of the client's address family, the peer admitted by
// the current config, and no bandwidth cap to enforce. It is offered until the earliest of the
// channel's, its permission's and the allocation's expiry, and offered again when a ChannelBind,
// CreatePermission or Refresh moves that instant. It is withdrawn when the channel, its family
// or the allocation goes away, or a new config no longer admits its peer.
//
// Called on requests, timer sweeps and config changes only, never per packet.
#pragma once

#include <cstdint>

#include "turn/allocation.h"
#include "turn/time.h"

namespace kturn::turn {

// What the kernel relayed for one channel, not yet counted by the core.
struct OffloadedTraffic {
  uint64_t packets_to_peer = 0;
  uint64_t bytes_to_peer = 0;  // application data, as the core counts it
  uint64_t packets_to_client = 0;
  uint64_t bytes_to_client = 0;
  bool empty() const { return packets_to_peer == 0 && packets_to_client == 0; }
};

class ChannelOffload {
 public:
  virtual ~ChannelOffload() = default;
  // The kernel may relay `channel` of `allocation` (both directions) until `until`. Called again
  // for a channel already offered, to move `until`. False when it cannot take the channel (its
  // maps are full): the channel stays with the core.
  virtual bool offer(const Allocation& allocation, const ChannelBinding& channel,
                     MonoTime until) = 0;
  // The kernel must stop relaying `channel`; returns what it relayed since last counted.
  virtual OffloadedTraffic withdraw(const Allocation& allocation,
                                    const ChannelBinding& channel) = 0;
};

}  // namespace kturn::turn
