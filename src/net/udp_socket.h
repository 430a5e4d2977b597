// UdpSocket: a bound, non-blocking UDP socket (listener or relay).
#pragma once

#include <cstdint>
#include <utility>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "net/file_descriptor.h"

namespace kturn::net {

struct UdpSocketOptions {
  // SO_REUSEPORT: one listener socket per worker on the same address, the kernel spreading
  // clients by 4-tuple hash. Leave it off for relay sockets, where a port must be exclusive.
  bool reuse_port = false;
  // SO_RCVBUF / SO_SNDBUF in bytes; 0 keeps the kernel default. SO_*BUFFORCE is tried first so
  // that a process with CAP_NET_ADMIN can exceed net.core.[rw]mem_max.
  int recv_buffer = 0;
  int send_buffer = 0;
  // IPV6_V6ONLY for IPv6 sockets. When false, a socket bound to :: also receives IPv4, and reports
  // those peers as IPv4-mapped IPv6 addresses (::ffff:a.b.c.d), which sends to them accept too.
  bool ipv6_only = true;
  // IP_PKTINFO / IPV6_RECVPKTINFO: every received datagram carries the local address it was sent
  // to (UdpReceiveBatch::destination), which a socket bound to a wildcard address needs in order
  // to answer from the right address.
  bool packet_info = false;
  // UDP_GRO (Linux 5.0+): the kernel may hand over a train of datagrams from one sender, all of
  // one size but the last, as one (UdpReceiveBatch::segmentSize). Where the kernel lacks it, the
  // socket simply receives datagrams one by one.
  bool gro = false;
  // IP_RECVORIGDSTADDR / IPV6_RECVORIGDSTADDR: every received datagram carries the transport
  // address it was sent to, port included (UdpReceiveBatch::originalDestination): for a socket
  // that the relay port lookup (xdp::RelayLookup) hands datagrams of many ports to.
  bool original_destination = false;
};

// Owns its descriptor; movable so it can be returned in a Result and stored, not copyable.
// I/O goes through UdpReceiveBatch / UdpSendBatch on fd().
class UdpSocket {
 public:
  // Binds to `local`; port 0 lets the kernel choose an ephemeral port (see localAddress()).
  // The socket is non-blocking and close-on-exec.
  static Result<UdpSocket> bind(const TransportAddress& local, const UdpSocketOptions& opts);

  // Binds to the first free port of [min_port, max_port], trying min_port + start_hint % size
  // first and wrapping around, so that callers spreading allocations over a configured relay
  // range (RFC 8656 §7.2 item 8) can pass a random or rotating hint. Returns kExhausted when every
  // port is in use, kInvalidArgument for an empty range or min_port 0. `even_only`: even ports
  // only (EVEN-PORT), the odd ones skipped without a bind.
  static Result<UdpSocket> bindInRange(const IpAddress& ip, uint16_t min_port, uint16_t max_port,
                                       const UdpSocketOptions& opts, uint32_t start_hint,
                                       bool even_only = false);

  // An empty socket (fd() == -1), to be assigned a bound one.
  UdpSocket() = default;

  int fd() const { return fd_.get(); }
  // The bound address as the kernel reports it (the real port when bound to port 0).
  TransportAddress localAddress() const { return local_; }

 private:
  UdpSocket(FileDescriptor fd, const TransportAddress& local) : fd_(std::move(fd)), local_(local) {}

  FileDescriptor fd_;
  TransportAddress local_;
};

}  // namespace kturn::net
