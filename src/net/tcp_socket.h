// TCP sockets for stream listeners (TURN over TCP and TLS): a non-blocking listening socket,
// SO_REUSEPORT so every worker accepts on the same address, and accept without blocking.
#pragma once

#include <optional>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "net/file_descriptor.h"

namespace kturn::net {

struct TcpListenOptions {
  bool reuse_port = false;
  int backlog = 1024;
};

// A listening socket on `local` (port 0: an ephemeral port; net::localAddress() in
// net/sockaddr.h tells which).
Result<FileDescriptor> listenTcp(const TransportAddress& local, const TcpListenOptions& opts);

struct Accepted {
  // On a dual-stack ("::") listener an IPv4 client's addresses read as IPv4, not ::ffff:a.b.c.d.
  FileDescriptor fd;  // non-blocking, close-on-exec, TCP_NODELAY
  TransportAddress remote;
  TransportAddress local;
};

// One pending connection, or nullopt when there is none (EAGAIN) or it failed before it could be
// accepted (the peer reset it): the caller just stops accepting for this round. Errors that
// concern the listening socket itself (EMFILE, ENFILE, ENOBUFS) are returned.
Result<std::optional<Accepted>> acceptTcp(int listening_fd);

// A non-blocking connect from `local` to `remote` (RFC 6062: a TCP relay connects to peers from
// its relayed address, which also listens, so both sockets carry SO_REUSEADDR and SO_REUSEPORT).
// The connection is usually still in progress: the socket turns writable when it is up or has
// failed, and connectResult() tells which.
Result<FileDescriptor> connectTcpFrom(const TransportAddress& local,
                                      const TransportAddress& remote);
// 0 once a connection started by connectTcpFrom() is up, else its errno.
int connectResult(int fd);

}  // namespace kturn::net
