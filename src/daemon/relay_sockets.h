// The worker's RelayAllocator: one UDP socket per allocation (two for a dual allocation, IPv4
// and IPv6), bound on the listener's address (or the address the client reached when the
// listener binds a wildcard), registered with the worker's event loop and tagged with the
// allocation id.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
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
  void closeFamily(turn::AllocationId allocation, AddressFamily family) override;
  // TCP relays (RFC 6062) are not opened yet: open() refuses them (442), so these never run.
  bool connectPeer(turn::AllocationId, turn::ConnectionId, const TransportAddress&) override {
    return false;
  }
  void bindConnection(turn::ConnectionId, const FiveTuple&) override {}
  void closeConnection(turn::ConnectionId) override {}

  // The relay socket of a live allocation that sends to `peer`, or -1. O(1): indexed by the
  // allocation's slot.
  int fd(turn::AllocationId allocation, const IpAddress& peer) const {
    const Slot* slot = slotOf(allocation);
    if (slot == nullptr) return -1;
    return slot->additional.fd() >= 0 && !peer.isV4() ? slot->additional.fd() : slot->socket.fd();
  }
  // Open relay sockets, both of a dual allocation counted.
  size_t openCount() const { return open_; }

 private:
  struct Slot {
    turn::AllocationId id{};
    net::UdpSocket socket;
    net::UdpSocket additional;  // a dual allocation's IPv6 relay
  };

  // The slot of a live allocation, or null (an id that outlived its allocation included).
  const Slot* slotOf(turn::AllocationId allocation) const {
    return allocation.index < slots_.size() && slots_[allocation.index].id == allocation
               ? &slots_[allocation.index]
               : nullptr;
  }
  Slot* slotOf(turn::AllocationId allocation) {
    return const_cast<Slot*>(std::as_const(*this).slotOf(allocation));
  }

  // Registers `socket` with the loop, tagged with `id`.
  Result<void> watch(turn::AllocationId id, const net::UdpSocket& socket);
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
