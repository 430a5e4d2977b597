// A token bucket for byte-rate caps on the data path: integer arithmetic, no allocation, no
// clock of its own (the caller passes the batch time). Starts full, so a new flow gets its burst.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "turn/time.h"

namespace kturn::turn {

class TokenBucket {
 public:
  // A burst of this long at the capped rate passes unshaped (media is bursty: key frames).
  static constexpr std::chrono::milliseconds kBurst{500};
  static constexpr uint64_t kMinBurstBytes = 16 * 1024;

  static constexpr uint64_t burstFor(uint64_t bytes_per_second) {
    return std::max(kMinBurstBytes, bytes_per_second * kBurst.count() / 1000);
  }

  // Takes `bytes` if the bucket holds them after refilling at `bytes_per_second` since the last
  // call; false (and nothing taken) otherwise.
  bool take(uint64_t bytes, MonoTime now, uint64_t bytes_per_second) {
    refill(now, bytes_per_second);
    if (nano_tokens_ < bytes * kNano) return false;
    nano_tokens_ -= bytes * kNano;
    return true;
  }

  // For byte streams, which are paced rather than dropped: the whole bytes the bucket holds
  // after refilling, which the caller reads at most and then spend()s.
  uint64_t available(MonoTime now, uint64_t bytes_per_second) {
    refill(now, bytes_per_second);
    return nano_tokens_ / kNano;
  }
  void spend(uint64_t bytes) { nano_tokens_ -= std::min(nano_tokens_, bytes * kNano); }

 private:
  static constexpr uint64_t kNano = 1'000'000'000;

  void refill(MonoTime now, uint64_t bytes_per_second) {
    // Kept in nano-bytes, so refills between calls microseconds apart are exact, not truncated.
    const uint64_t burst = burstFor(bytes_per_second) * kNano;
    if (!started_) {
      started_ = true;
      nano_tokens_ = burst;
      last_ = now;
    } else if (now > last_) {
      // At most one second of refill keeps the product below 2^64 up to 100 Gbit/s.
      const auto ns = std::min<int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count(), kNano);
      nano_tokens_ = std::min(burst, nano_tokens_ + static_cast<uint64_t>(ns) * bytes_per_second);
      last_ = now;
    }
  }

  uint64_t nano_tokens_ = 0;
  MonoTime last_{};
  bool started_ = false;
};

}  // namespace kturn::turn
