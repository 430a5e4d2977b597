// Relay ports held back by EVEN-PORT's R bit until an Allocate with the matching
// RESERVATION-TOKEN takes them (RFC 8656 §7.2, §14.9). Shared by all workers, because the
// second Allocate comes from another client port and may land on another worker: the one
// cross-worker structure of the relay path, touched only on Allocate, never per packet.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "net/udp_socket.h"

namespace kturn::worker {

// A reserved relay port: its socket, or with shared relay sockets (SharedRelayPorts) only its
// address, held in the shared port table.
struct ReservedPort {
  net::UdpSocket socket;     // invalid for a port of the shared relay sockets
  TransportAddress address;  // the relayed transport address
};

class ReservationPool {
 public:
  // RFC 8656 §7.2: a reservation is held for about 30 seconds.
  static constexpr int64_t kHoldSeconds = 30;

  // Holds `port` and returns its token.
  uint64_t reserve(ReservedPort port, int64_t now_unix);
  // Hands over the port reserved under `token`, if it is still held.
  std::optional<ReservedPort> take(uint64_t token, int64_t now_unix);
  size_t size();
  // Called (under the pool's lock) for each reservation of a shared relay port that lapses
  // untaken, so that its owner frees the port; a socket's reservation just closes it.
  void setOnExpired(std::function<void(const TransportAddress&)> fn) {
    std::lock_guard lock(mutex_);
    on_expired_ = std::move(fn);
  }

 private:
  struct Reservation {
    ReservedPort port;
    int64_t expires_unix = 0;
  };
  void expire(int64_t now_unix);  // with mutex_ held

  std::function<void(const TransportAddress&)> on_expired_;
  std::mutex mutex_;
  uint64_t next_token_ =
      0x6b7475726e000001ULL;  // arbitrary start: tokens are not counters to guess from 1
  std::unordered_map<uint64_t, Reservation> held_;
};

}  // namespace kturn::worker
