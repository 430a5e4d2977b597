// The built-in UDP echo peer: `threads` SO_REUSEPORT sockets on one address, each served by a
// thread that answers every datagram to its source with recvmmsg/sendmmsg. It stands for the
// media server behind the relay and must never be the bottleneck.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::bench {

class EchoPeer {
 public:
  EchoPeer() = default;
  ~EchoPeer();
  EchoPeer(const EchoPeer&) = delete;
  EchoPeer& operator=(const EchoPeer&) = delete;

  // Binds (port 0: the kernel picks one, shared by every thread's socket) and starts the threads.
  // With `netns` (a path such as /run/netns/NAME), the sockets are made in that network
  // namespace; the calling thread returns to its own before this returns.
  Result<void> start(const TransportAddress& bind, size_t threads, const std::string& netns = {});
  void stop();

  TransportAddress address() const { return address_; }
  uint64_t received() const;
  uint64_t sent() const;

 private:
  struct alignas(64) Counters {
    std::atomic<uint64_t> received{0};
    std::atomic<uint64_t> sent{0};
  };
  void serve(int fd, Counters& counters);

  TransportAddress address_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  std::vector<Counters> counters_;
  std::atomic<bool> stop_{false};
};

}  // namespace kturn::bench
