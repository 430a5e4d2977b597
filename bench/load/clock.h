// The load generator's clock: CLOCK_MONOTONIC in nanoseconds (a vDSO call, no syscall).
#pragma once

#include <time.h>

#include <cstdint>

namespace kturn::bench {

inline int64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline constexpr int64_t kNsPerSecond = 1'000'000'000;

inline int64_t secondsToNs(double s) { return static_cast<int64_t>(s * 1e9); }

}  // namespace kturn::bench
