#include "turn/auth_throttle.h"

namespace kturn::turn {

bool AuthThrottle::allows(const IpAddress& ip, int64_t now_seconds, const Limits& limits) const {
  if (limits.max_failures == 0) return true;
  const Slot& s = slots_[slotOf(ip)];
  if (s.ip != ip || now_seconds - s.window_start >= limits.window_seconds) return true;
  return s.failures < limits.max_failures;
}

bool AuthThrottle::recordFailure(const IpAddress& ip, int64_t now_seconds, const Limits& limits) {
  if (limits.max_failures == 0) return false;
  Slot& s = slots_[slotOf(ip)];
  if (s.ip != ip || now_seconds - s.window_start >= limits.window_seconds) {
    s = Slot{ip, now_seconds, 0};
  }
  return ++s.failures == limits.max_failures;
}

}  // namespace kturn::turn
