// The worker's RelayAllocator: one UDP socket per allocation (two for a dual allocation, IPv4
// and IPv6), bound on the listener's address (or the address the client reached when the
// listener binds a wildcard), registered with the worker's event loop and tagged with the
// allocation id. A TCP allocation (RFC 6062) gets a listening TCP socket instead, and its peer
// connections live in PeerLinks.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "daemon/dataplane.h"
#include "daemon/peer_links.h"
#include "daemon/reservation_pool.h"
#include "net/event_loop.h"
#include "net/file_descriptor.h"
#include "net/udp_socket.h"
#include "turn/relay_allocator.h"

namespace kturn::daemon {

class RelaySockets : public turn::RelayAllocator {
 public:
  // A relay socket of `allocation` is readable (UDP), or has a peer connection to accept (TCP).
  using OnReadable = std::function<void(turn::AllocationId, int fd)>;

  RelaySockets(net::EventLoop& loop, ReservationPool& reservations, OnReadable on_readable,
               OnReadable on_acceptable, PeerLinks::Callbacks links, uint32_t port_hint_seed);
  ~RelaySockets() override;
  RelaySockets(const RelaySockets&) = delete;
  RelaySockets& operator=(const RelaySockets&) = delete;

  void setDataplane(DataplanePtr dataplane) { dataplane_ = std::move(dataplane); }
  // UDP_GRO on the UDP relays opened from now on: a peer's train may arrive as one
  // (UdpReceiveBatch::segmentSize). Relays on ports reserved by EVEN-PORT stay without.
  void setGro(bool gro) { gro_ = gro; }

  Result<turn::RelayGrant> open(const turn::RelayRequest& request) override;
  void close(turn::AllocationId allocation) override;
  void closeFamily(turn::AllocationId allocation, AddressFamily family) override;
  bool connectPeer(turn::AllocationId allocation, turn::ConnectionId id,
                   const TransportAddress& peer) override;
  // Noted for the worker, which detaches the data connection from its stream listener once the
  // ConnectionBind response is queued, and joins it here (links().join()).
  void bindConnection(turn::ConnectionId id, const FiveTuple& data) override {
    binds_.push_back({id, data});
  }
  void closeConnection(turn::ConnectionId id) override { links_.close(id); }
  turn::ConnectionTraffic takeConnectionTraffic(turn::ConnectionId id) override {
    return links_.take(id);
  }

  // The binds the core made since the last takeBinds().
  bool hasBinds() const { return !binds_.empty(); }
  std::vector<std::pair<turn::ConnectionId, FiveTuple>> takeBinds() { return std::move(binds_); }
  PeerLinks& links() { return links_; }

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
    net::FileDescriptor tcp;    // a TCP allocation's relay, listening
    TransportAddress tcp_address;
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
  // A TCP allocation's listening relay, in the listener's relay port range.
  Result<turn::RelayGrant> openTcp(turn::AllocationId id, const ListenerSpec* listener,
                                   const IpAddress& ip);

  net::EventLoop& loop_;
  ReservationPool& reservations_;
  OnReadable on_readable_;
  OnReadable on_acceptable_;
  PeerLinks links_;
  std::vector<std::pair<turn::ConnectionId, FiveTuple>> binds_;
  DataplanePtr dataplane_;
  std::vector<Slot> slots_;
  size_t open_ = 0;
  uint32_t next_hint_;
  bool gro_ = false;
};

}  // namespace kturn::daemon
