// The worker's RelayAllocator: one UDP socket per allocation, bound on the listener's address
// (or the address the client reached when the listener binds a wildcard), registered with the
// worker's event loop and tagged with the allocation id.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "daemon/dataplane.h"
#include "daemon/reservation_pool.h"
#include "net/event_loop.h"
#include "net/udp_socket.h"
#include "turn/relay_allocator.h"

namespace kturn::daemon {

class RelaySockets : public turn::RelayAllocator {
 public:
  using OnReadable = std::function<void(turn::AllocationId, int fd)>;

  RelaySockets(net::EventLoop& loop, ReservationPool& reservations, OnReadable on_readable,
               uint32_t port_hint_seed);
  ~RelaySockets() override;
  RelaySockets(const RelaySockets&) = delete;
  RelaySockets& operator=(const RelaySockets&) = delete;

  void setDataplane(DataplanePtr dataplane) { dataplane_ = std::move(dataplane); }

  Result<turn::RelayGrant> open(const turn::RelayRequest& request) override;
  void close(turn::AllocationId allocation) override;

  // The relay socket of a live allocation, or -1. O(1): indexed by the allocation's slot.
  int fd(turn::AllocationId allocation) const {
    return allocation.index < slots_.size() && slots_[allocation.index].id == allocation
               ? slots_[allocation.index].socket.fd()
               : -1;
  }
  size_t openCount() const { return open_; }

 private:
  struct Slot {
    turn::AllocationId id{};
    net::UdpSocket socket;
  };

  // A relay socket; with `next`, also the socket of the port after it (EVEN-PORT R=1), both
  // bound or neither.
  Result<net::UdpSocket> bindRelay(const ListenerSpec* listener, const IpAddress& ip, bool even,
                                   bool dont_fragment, net::UdpSocket* next);

  net::EventLoop& loop_;
  ReservationPool& reservations_;
  OnReadable on_readable_;
  DataplanePtr dataplane_;
  std::vector<Slot> slots_;
  size_t open_ = 0;
  uint32_t next_hint_;
};

}  // namespace kturn::daemon
