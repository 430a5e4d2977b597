// Allocations per username across every TURN core of the process: admin.user_quota (STUNner's
// GatewayConfig userQuota) holds per process, whatever the number of workers. One of the few
// structures the workers share (docs/architecture.md §3): a counter map under a mutex, taken by an
// Allocate that passed authentication and by an allocation's end, never by a relayed packet.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kturn::turn {

class UserQuota {
 public:
  UserQuota() = default;
  UserQuota(const UserQuota&) = delete;
  UserQuota& operator=(const UserQuota&) = delete;

  // Counts one more allocation of `user`, unless it holds `limit` already (0: no limit). Every
  // true is matched by one release().
  bool tryAcquire(std::string_view user, uint32_t limit);
  void release(std::string_view user);
  uint32_t count(std::string_view user) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> counts_;  // guarded by mutex_; users holding some
};

}  // namespace kturn::turn
