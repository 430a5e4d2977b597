#include "turn/bandwidth_caps.h"

#include <algorithm>

namespace kturn::turn {

TokenBucket& BandwidthCaps::listenerBucket(ListenerId listener, Direction direction) {
  if (listener >= listeners_.size()) listeners_.resize(listener + 1);
  return listeners_[listener][static_cast<size_t>(direction)];
}

bool BandwidthCaps::take(Allocation& a, Direction direction, uint64_t bytes, MonoTime now) {
  if (per_allocation_ != 0 && !allocationBucket(a, direction).take(bytes, now, per_allocation_)) {
    return false;
  }
  return per_listener_ == 0 ||
         listenerBucket(a.listener, direction).take(bytes, now, per_listener_);
}

uint64_t BandwidthCaps::available(Allocation& a, Direction direction, MonoTime now) {
  uint64_t allowed = UINT64_MAX;
  if (per_allocation_ != 0) {
    allowed = allocationBucket(a, direction).available(now, per_allocation_);
  }
  if (per_listener_ != 0) {
    allowed =
        std::min(allowed, listenerBucket(a.listener, direction).available(now, per_listener_));
  }
  return allowed;
}

void BandwidthCaps::spend(Allocation& a, Direction direction, uint64_t bytes) {
  if (per_allocation_ != 0) allocationBucket(a, direction).spend(bytes);
  if (per_listener_ != 0) listenerBucket(a.listener, direction).spend(bytes);
}

}  // namespace kturn::turn
