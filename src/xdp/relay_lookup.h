// RelayLookup: bpf/kturn_relay_lookup.bpf.c loaded and attached to kturnd's network namespace,
// so that each worker serves all of its relayed transport addresses from one UDP socket per
// address family (the "shared" relay sockets of RelaySockets) instead of one socket, one bind and
// one descriptor per allocation. kturnd registers the workers' sockets once (setSocket) and each
// relayed address when it is allocated (add) and released (remove); the kernel then delivers a
// datagram sent to that address to its worker's socket, which learns the address from
// IP_RECVORIGDSTADDR / IPV6_RECVORIGDSTADDR.
//
// Loading needs CAP_BPF, attaching CAP_NET_ADMIN, as for the fast path. The destructor detaches:
// a kturnd that stops takes no datagram with it. Map updates are thread-safe (the kernel's), so
// workers call add/remove from their own threads.
#pragma once

#include <cstdint>
#include <memory>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "kturn_relay_lookup.h"

struct kturn_relay_lookup;  // the bpftool skeleton (kturn_relay_lookup.skel.h)

namespace kturn::xdp {

class RelayLookup {
 public:
  // Loads the program with room for `max_addresses` relayed addresses and attaches it to the
  // calling thread's network namespace. kUnsupported when the kernel refuses (no sk_lookup,
  // no privilege); the message says why.
  static Result<std::unique_ptr<RelayLookup>> attach(uint32_t max_addresses);
  ~RelayLookup();
  RelayLookup(const RelayLookup&) = delete;
  RelayLookup& operator=(const RelayLookup&) = delete;

  // Registers `fd`, an unconnected UDP socket, as socket `index` (<
  // KTURN_RELAY_LOOKUP_MAX_SOCKETS).
  Result<void> setSocket(uint32_t index, int fd);
  // Datagrams to `relayed` go to socket `index` from now on. False when the map is full.
  bool add(const TransportAddress& relayed, uint32_t index);
  void remove(const TransportAddress& relayed);

  int portsMapFd() const;

 private:
  RelayLookup(kturn_relay_lookup* skeleton, int link_fd);

  kturn_relay_lookup* skel_;
  int link_fd_;
};

// The map key of a relayed transport address.
kturn_relay_key relayKey(const TransportAddress& relayed);

}  // namespace kturn::xdp
