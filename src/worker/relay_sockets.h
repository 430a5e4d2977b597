// The worker's RelayAllocator: one UDP socket per allocation (two for a dual allocation, IPv4
// and IPv6), bound on the listener's address (or the address the client reached when the
// listener binds a wildcard), registered with the worker's event loop and tagged with the
// allocation id. A TCP allocation (RFC 6062) gets a listening TCP socket instead, and its peer
// connections live in PeerLinks.
//
// With shared relay sockets (setShared: `--relay-sockets shared`), a UDP allocation on a
// listener with a relay port range gets no socket: its relayed address comes from the process's
// SharedRelayPorts, the worker's shared sockets receive its datagrams (allocationAt() tells
// whose) and the worker sends from it through its raw sender (sharedSource()).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/event_loop.h"
#include "net/file_descriptor.h"
#include "net/udp_socket.h"
#include "turn/relay_allocator.h"
#include "worker/config_snapshot.h"
#include "worker/peer_links.h"
#include "worker/reservation_pool.h"
#include "worker/shared_relay_ports.h"

namespace kturn::worker {

class RelaySockets : public turn::RelayAllocator {
 public:
  // A relay socket of `allocation` is readable (UDP), or has a peer connection to accept (TCP).
  using OnReadable = std::function<void(turn::AllocationId, int fd)>;

  RelaySockets(net::EventLoop& loop, ReservationPool& reservations, OnReadable on_readable,
               OnReadable on_acceptable, PeerLinks::Callbacks links, uint32_t port_hint_seed);
  ~RelaySockets() override;
  RelaySockets(const RelaySockets&) = delete;
  RelaySockets& operator=(const RelaySockets&) = delete;

  void setDataplane(ConfigSnapshotPtr dataplane) { dataplane_ = std::move(dataplane); }
  // Relayed addresses from `ports` (not owned; null: a socket per allocation), delivered to the
  // shared sockets of worker `worker`.
  void setShared(SharedRelayPorts* ports, size_t worker) {
    shared_ = ports;
    worker_ = worker;
  }
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
  // RFC 8016: a UDP allocation's relay sockets (or shared relayed addresses) leave this worker's
  // loop and join the loop of the worker the allocation moves to. Datagrams that arrive in
  // between wait in the socket. TCP allocations do not move (null).
  std::unique_ptr<turn::RelayHandle> detach(turn::AllocationId allocation) override;
  void attach(turn::AllocationId allocation, std::unique_ptr<turn::RelayHandle> relay) override;

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
  // A live allocation's relayed address without a socket of its own that sends to `peer`, or
  // null (it has a socket: fd()). O(1).
  const TransportAddress* sharedSource(turn::AllocationId allocation, const IpAddress& peer) const {
    const Slot* slot = slotOf(allocation);
    if (slot == nullptr || slot->shared.port == 0) return nullptr;
    return slot->shared_additional.port != 0 && !peer.isV4() ? &slot->shared_additional
                                                             : &slot->shared;
  }
  // The allocation whose shared relayed address is `relayed`, if any.
  std::optional<turn::AllocationId> allocationAt(const TransportAddress& relayed) const {
    auto it = by_address_.find(relayed);
    if (it == by_address_.end()) return std::nullopt;
    return it->second;
  }

 private:
  struct Slot {
    turn::AllocationId id{};
    net::UdpSocket socket;
    net::UdpSocket additional;  // a dual allocation's IPv6 relay
    net::FileDescriptor tcp;    // a TCP allocation's relay, listening
    TransportAddress tcp_address;
    // With shared relay sockets: the relayed addresses (port 0: none).
    TransportAddress shared;
    TransportAddress shared_additional;
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
  // A UDP allocation's relayed addresses from the shared ports (the listener has a range).
  Result<turn::RelayGrant> openShared(const turn::RelayRequest& request,
                                      const ListenerSpec& listener, const IpAddress& ip,
                                      const std::optional<IpAddress>& public_ip);
  // A slot for `id` holding the shared address `relayed`.
  Result<turn::RelayGrant> adoptShared(turn::AllocationId id, const TransportAddress& relayed,
                                       const std::optional<IpAddress>& public_ip);
  void releaseShared(Slot& slot);
  // A TCP allocation's listening relay, in the listener's relay port range.
  Result<turn::RelayGrant> openTcp(turn::AllocationId id, const ListenerSpec* listener,
                                   const IpAddress& ip);

  net::EventLoop& loop_;
  ReservationPool& reservations_;
  OnReadable on_readable_;
  OnReadable on_acceptable_;
  PeerLinks links_;
  std::vector<std::pair<turn::ConnectionId, FiveTuple>> binds_;
  ConfigSnapshotPtr dataplane_;
  std::vector<Slot> slots_;
  SharedRelayPorts* shared_ = nullptr;
  size_t worker_ = 0;
  std::unordered_map<TransportAddress, turn::AllocationId> by_address_;  // shared addresses
  std::vector<uint16_t> excluded_ports_;  // openShared()'s scratch: its listeners' ports
  uint32_t next_hint_;
  bool gro_ = false;
};

}  // namespace kturn::worker
