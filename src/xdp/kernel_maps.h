// KernelMaps: OffloadMaps over the maps of a loaded OffloadProgram.
#pragma once

#include <cstddef>

#include "xdp/offload_maps.h"
#include "xdp/offload_program.h"

namespace kturn::xdp {

class KernelMaps final : public OffloadMaps {
 public:
  // Borrows `program`, which must outlive this object. Maps the counter array into memory; if
  // that fails, counters read as zero (the kernel still relays, metrics miss it).
  explicit KernelMaps(const OffloadProgram& program);
  ~KernelMaps() override;
  KernelMaps(const KernelMaps&) = delete;
  KernelMaps& operator=(const KernelMaps&) = delete;

  bool putChannel(const kturn_channel_key& key, const kturn_channel_value& value) override;
  bool putPeer(const kturn_peer_key& key, const kturn_peer_value& value) override;
  void eraseChannel(const kturn_channel_key& key) override;
  void erasePeer(const kturn_peer_key& key) override;
  bool putBlock(const kturn_block_key& key, const kturn_block_value& value) override;
  kturn_counter readCounter(uint32_t slot) const override;
  uint32_t counterSlots() const override { return slots_; }

 private:
  int channels_fd_;
  int peers_fd_;
  int blocked_fd_;
  uint32_t* blocking_;  // the program's switch (OffloadProgram::blockingSwitch), may be null
  uint32_t slots_;
  kturn_counter* counters_ = nullptr;  // the mapped kturn_counters array
  size_t mapped_size_ = 0;
};

}  // namespace kturn::xdp
