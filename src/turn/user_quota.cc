#include "turn/user_quota.h"

namespace kturn::turn {

bool UserQuota::tryAcquire(std::string_view user, uint32_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t& held = counts_[std::string(user)];  // a refusal finds held >= limit >= 1: no 0 left
  if (limit != 0 && held >= limit) return false;
  ++held;
  return true;
}

void UserQuota::release(std::string_view user) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = counts_.find(std::string(user));
  if (it != counts_.end() && --it->second == 0) counts_.erase(it);
}

uint32_t UserQuota::count(std::string_view user) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = counts_.find(std::string(user));
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace kturn::turn
