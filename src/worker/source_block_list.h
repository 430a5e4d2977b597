// SourceBlockList: one worker's turn::SourceBlocker over the kernel fast path's drop list
// (kturn_blocked in bpf/kturn_offload.h). A source the TURN core's auth throttle caught is
// written there with its listener port and an expiry; the program then drops its datagrams to
// that port before the network stack, counting them. UDP listeners only (TURN-UDP, TURN-DTLS):
// the program sees no TCP, where the core's throttle keeps working alone.
//
// Runs on its worker's thread, once per source caught: one bpf() system call, never per packet.
#pragma once

#include <cstdint>

#include "turn/source_blocker.h"
#include "xdp/offload_maps.h"

namespace kturn::worker {

class SourceBlockList final : public turn::SourceBlocker {
 public:
  // `maps` must outlive this object.
  explicit SourceBlockList(xdp::OffloadMaps& maps) : maps_(maps) {}
  SourceBlockList(const SourceBlockList&) = delete;
  SourceBlockList& operator=(const SourceBlockList&) = delete;

  bool block(turn::ListenerId listener, const FiveTuple& five_tuple, turn::MonoTime until) override;

  // Sources written, and those the kernel refused.
  uint64_t written() const { return written_; }
  uint64_t refused() const { return refused_; }

 private:
  xdp::OffloadMaps& maps_;
  uint64_t written_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace kturn::worker
