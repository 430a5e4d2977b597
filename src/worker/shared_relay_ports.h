// SharedRelayPorts: kturnd's relay ports served without a socket each (`--relay-sockets shared`).
// Each worker has one UDP socket per address family that receives the datagrams of all its
// allocations' relayed transport addresses, handed to it by the relay port lookup
// (xdp::RelayLookup, an sk_lookup program on kturnd's network namespace), and sends from those
// addresses through a raw socket (net::RawUdpSender). An allocation then costs no descriptor, no
// socket's kernel memory and no bind: one entry in the lookup's map and one in this table.
//
// This is the process-wide table of the relayed addresses in use, shared by the workers because
// a port must be unique per address across all of them (and a RESERVATION-TOKEN's port is taken
// by whichever worker the second Allocate lands on). Touched on Allocate and on release, never
// per packet; one mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "xdp/relay_lookup.h"

namespace kturn::worker {

class SharedRelayPorts {
 public:
  // Loads and attaches the lookup (for up to `max_addresses` relayed addresses at once).
  // kUnsupported without the privileges, for the daemon's one warning before it falls back to a
  // socket per allocation.
  static Result<std::unique_ptr<SharedRelayPorts>> open(uint32_t max_addresses);

  // Worker `worker`'s sockets, IPv4 and IPv6 (-1: none of that family).
  Result<void> setSockets(size_t worker, int fd4, int fd6);

  // A free relayed address on `ip` in [min_port, max_port], its datagrams delivered to
  // `worker`'s socket from now on: even if `even`; with `next`, the odd port after it is taken
  // too (for a RESERVATION-TOKEN) and returned there, not yet delivered anywhere. `hint` rotates
  // where the search starts. kExhausted when the range has no such port free.
  // Ports in `excluded` are never taken: the lookup runs before the kernel's own, so a relayed
  // address on a UDP listener's port would take the listener's datagrams.
  Result<TransportAddress> take(const IpAddress& ip, uint16_t min_port, uint16_t max_port,
                                bool even, uint32_t hint, size_t worker,
                                std::span<const uint16_t> excluded,
                                TransportAddress* next = nullptr);
  // Delivers a reserved address's datagrams to `worker`'s socket (the reservation is taken).
  bool deliverTo(const TransportAddress& address, size_t worker);
  // Stops delivering and frees the address.
  void release(const TransportAddress& address);
  size_t inUse();

 private:
  explicit SharedRelayPorts(std::unique_ptr<xdp::RelayLookup> lookup)
      : lookup_(std::move(lookup)) {}
  static uint32_t socketIndex(size_t worker, const IpAddress& ip) {
    return static_cast<uint32_t>(2 * worker + (ip.isV4() ? 0 : 1));
  }

  std::unique_ptr<xdp::RelayLookup> lookup_;
  std::mutex mutex_;
  std::unordered_set<TransportAddress> in_use_;
};

}  // namespace kturn::worker
