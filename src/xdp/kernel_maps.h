// KernelMaps: OffloadMaps over the maps of a loaded OffloadProgram.
#pragma once

#include <vector>

#include "xdp/offload_maps.h"
#include "xdp/offload_program.h"

namespace kturn::xdp {

class KernelMaps final : public OffloadMaps {
 public:
  // Borrows `program`, which must outlive this object.
  explicit KernelMaps(const OffloadProgram& program);

  bool putChannel(const kturn_channel_key& key, const kturn_channel_value& value) override;
  bool putPeer(const kturn_peer_key& key, const kturn_peer_value& value) override;
  void eraseChannel(const kturn_channel_key& key) override;
  void erasePeer(const kturn_peer_key& key) override;
  kturn_counter readCounter(uint32_t slot) override;
  void resetCounter(uint32_t slot) override;
  uint32_t counterSlots() const override { return slots_; }

 private:
  int channels_fd_;
  int peers_fd_;
  int counters_fd_;
  uint32_t slots_;
  int cpus_;
};

}  // namespace kturn::xdp
