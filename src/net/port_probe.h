// Whether a listener's port is free for kturnd to take, and which processes hold it when not.
//
// kturnd's listener sockets share their port through SO_REUSEPORT (one per worker). The kernel
// lets any other socket with SO_REUSEPORT of the same user join that group, silently: a coturn
// already on 3478 and a kturnd started beside it would each get some of the clients. So a new
// listener's address is probed first with a socket that shares nothing.
#pragma once

#include <string>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::net {

// Binds `address` once without SO_REUSEPORT (UDP: without SO_REUSEADDR either; TCP: with it,
// which on Linux passes TIME_WAIT but not a listening socket) and closes the socket again. Fails
// when any socket holds the port on an overlapping address, naming the holders it can see:
// "127.0.0.1:3478/udp is in use by turnserver (pid 12141)". "::" probes both families, as
// the listener binds them.
Result<void> probePort(TransportProtocol protocol, const TransportAddress& address);

// "turnserver (pid 12141)" for every process with a socket bound to `port` (TCP: listening)
// that /proc shows: all of them as root, the caller's own user's otherwise, none of another
// network namespace. Reads /proc/net and each process's fds: for error messages, not a loop.
std::vector<std::string> portHolders(TransportProtocol protocol, uint16_t port);

}  // namespace kturn::net
