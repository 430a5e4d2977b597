// Time as the sans-I/O core sees it: passed in by the caller, never read from a clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace kturn::turn {

using Seconds = std::chrono::seconds;
using MonoTime = std::chrono::steady_clock::time_point;

// `mono` drives lifetimes and timers; `unix_seconds` is wall-clock time, needed only to check the
// expiry embedded in TURN REST API usernames.
struct Now {
  MonoTime mono{};
  int64_t unix_seconds = 0;
};

// Whole seconds on the monotonic clock, the resolution of every TURN lifetime.
inline int64_t monoSeconds(MonoTime t) {
  return std::chrono::duration_cast<Seconds>(t.time_since_epoch()).count();
}

}  // namespace kturn::turn
