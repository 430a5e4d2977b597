// Relay ports held back by EVEN-PORT's R bit until an Allocate with the matching
// RESERVATION-TOKEN takes them (RFC 8656 §7.2, §14.9). Shared by all workers, because the
// second Allocate comes from another client port and may land on another worker: the one
// cross-worker structure of the relay path, touched only on Allocate, never per packet.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "net/udp_socket.h"

namespace kturn::daemon {

class ReservationPool {
 public:
  // RFC 8656 §7.2: a reservation is held for about 30 seconds.
  static constexpr int64_t kHoldSeconds = 30;

  // Holds `socket` and returns its token.
  uint64_t reserve(net::UdpSocket socket, int64_t now_unix);
  // Hands over the socket reserved under `token`, if it is still held.
  std::optional<net::UdpSocket> take(uint64_t token, int64_t now_unix);
  size_t size();

 private:
  struct Reservation {
    net::UdpSocket socket;
    int64_t expires_unix = 0;
  };
  void expire(int64_t now_unix);  // with mutex_ held

  std::mutex mutex_;
  uint64_t next_token_ =
      0x6b7475726e000001ULL;  // arbitrary start: tokens are not counters to guess from 1
  std::unordered_map<uint64_t, Reservation> held_;
};

}  // namespace kturn::daemon
