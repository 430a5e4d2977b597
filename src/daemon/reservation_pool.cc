#include "daemon/reservation_pool.h"

namespace kturn::daemon {

void ReservationPool::expire(int64_t now_unix) {
  std::erase_if(held_, [now_unix](const auto& r) { return r.second.expires_unix <= now_unix; });
}

uint64_t ReservationPool::reserve(net::UdpSocket socket, int64_t now_unix) {
  std::lock_guard lock(mutex_);
  expire(now_unix);
  const uint64_t token = next_token_++;
  held_.emplace(token, Reservation{std::move(socket), now_unix + kHoldSeconds});
  return token;
}

std::optional<net::UdpSocket> ReservationPool::take(uint64_t token, int64_t now_unix) {
  std::lock_guard lock(mutex_);
  expire(now_unix);
  auto it = held_.find(token);
  if (it == held_.end()) return std::nullopt;
  net::UdpSocket socket = std::move(it->second.socket);
  held_.erase(it);
  return socket;
}

size_t ReservationPool::size() {
  std::lock_guard lock(mutex_);
  return held_.size();
}

}  // namespace kturn::daemon
