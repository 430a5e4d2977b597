// Conversions between kturn::TransportAddress and the kernel's sockaddr structures.
//
// The mapping is exact, never "smart": an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as reported
// by a dual-stack socket stays an IPv6 address, so what a caller sends to is exactly what it
// received from. IPv6 scope ids are neither written nor read (kturn does not serve link-local
// addresses).
#pragma once

#include <sys/socket.h>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::net {

// Fills `out` (zeroing it first) with a sockaddr_in or sockaddr_in6 for `address` and returns the
// length to pass to the kernel.
socklen_t toSockaddr(const TransportAddress& address, sockaddr_storage& out);

// Reads an AF_INET or AF_INET6 socket address. Any other family yields the default
// TransportAddress (0.0.0.0:0), which no real peer has; callers on the data path only pass
// addresses the kernel filled for an IP socket.
TransportAddress fromSockaddr(const sockaddr* sa);

// getsockname(2) of `fd` as a TransportAddress.
Result<TransportAddress> localAddress(int fd);

}  // namespace kturn::net
