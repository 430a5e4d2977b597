#include "worker/reservation_pool.h"

namespace kturn::worker {

void ReservationPool::expire(int64_t now_unix) {
  std::erase_if(held_, [&](const auto& r) {
    if (r.second.expires_unix > now_unix) return false;
    if (r.second.port.socket.fd() < 0 && on_expired_) on_expired_(r.second.port.address);
    return true;
  });
}

uint64_t ReservationPool::reserve(ReservedPort port, int64_t now_unix) {
  std::lock_guard lock(mutex_);
  expire(now_unix);
  const uint64_t token = next_token_++;
  held_.emplace(token, Reservation{std::move(port), now_unix + kHoldSeconds});
  return token;
}

std::optional<ReservedPort> ReservationPool::take(uint64_t token, int64_t now_unix) {
  std::lock_guard lock(mutex_);
  expire(now_unix);
  auto it = held_.find(token);
  if (it == held_.end()) return std::nullopt;
  ReservedPort port = std::move(it->second.port);
  held_.erase(it);
  return port;
}

size_t ReservationPool::size() {
  std::lock_guard lock(mutex_);
  return held_.size();
}

}  // namespace kturn::worker
