// Bounded exponential backoff between reconnects: initial, doubled after each failure up to
// max, back to initial after a success (client-go's wait.Backoff without jitter: the few
// watches of one operator do not stampede an API server).
#pragma once

#include <algorithm>
#include <chrono>

namespace kturn::k8s {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max), next_(initial) {}

  // The delay before the next attempt; doubles the one after.
  std::chrono::milliseconds next() {
    const std::chrono::milliseconds out = next_;
    next_ = std::min(max_, next_ * 2);
    return out;
  }
  void reset() { next_ = initial_; }

 private:
  const std::chrono::milliseconds initial_;
  const std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
};

}  // namespace kturn::k8s
