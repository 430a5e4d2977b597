#include "net/udp_socket.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

Error ioError(const std::string& what, int err) {
  return makeError(Error::Code::kIo, what + ": " + std::strerror(err));
}

Result<void> setIntOption(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) return ioError(what, errno);
  return {};
}

// SO_*BUFFORCE ignores net.core.[rw]mem_max but needs CAP_NET_ADMIN; without it fall back to the
// ordinary option, which the kernel silently caps.
Result<void> setBuffer(int fd, int force_name, int name, int bytes, const char* what) {
  if (bytes <= 0) return {};
  if (::setsockopt(fd, SOL_SOCKET, force_name, &bytes, sizeof bytes) == 0) return {};
  return setIntOption(fd, SOL_SOCKET, name, bytes, what);
}

// Creates an unbound socket with every option applied; bind() comes after, possibly retried.
Result<FileDescriptor> openSocket(AddressFamily family, const UdpSocketOptions& opts) {
  const bool v6 = family == AddressFamily::kIPv6;
  FileDescriptor fd(
      ::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ioError("socket", errno);
  const int s = fd.get();
  if (v6) {
    if (auto r = setIntOption(s, IPPROTO_IPV6, IPV6_V6ONLY, opts.ipv6_only ? 1 : 0, "IPV6_V6ONLY");
        !r) {
      return r.error();
    }
  }
  if (opts.reuse_port) {
    if (auto r = setIntOption(s, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT"); !r) return r.error();
  }
  if (auto r = setBuffer(s, SO_RCVBUFFORCE, SO_RCVBUF, opts.recv_buffer, "SO_RCVBUF"); !r) {
    return r.error();
  }
  if (auto r = setBuffer(s, SO_SNDBUFFORCE, SO_SNDBUF, opts.send_buffer, "SO_SNDBUF"); !r) {
    return r.error();
  }
  if (opts.gro) {
    const int on = 1;
    (void)::setsockopt(s, SOL_UDP, UDP_GRO, &on, sizeof on);  // optional: see UdpSocketOptions
  }
  if (opts.packet_info) {
    // On a dual-stack socket IPV6_RECVPKTINFO also covers IPv4 datagrams (as a mapped address).
    auto r = v6 ? setIntOption(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO")
                : setIntOption(s, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
    if (!r) return r.error();
  }
  if (opts.original_destination) {
    auto r = v6 ? setIntOption(s, IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, 1, "IPV6_RECVORIGDSTADDR")
                : setIntOption(s, IPPROTO_IP, IP_RECVORIGDSTADDR, 1, "IP_RECVORIGDSTADDR");
    if (!r) return r.error();
  }
  return fd;
}

// bind(2) returning errno (0 on success), so callers can tell "port taken" from real failures.
int bindTo(int fd, const TransportAddress& local) {
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(local, ss);
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) == 0 ? 0 : errno;
}

}  // namespace

Result<UdpSocket> UdpSocket::bind(const TransportAddress& local, const UdpSocketOptions& opts) {
  auto fd = openSocket(local.family(), opts);
  if (!fd) return fd.error();
  if (int err = bindTo(fd->get(), local); err != 0) {
    return ioError("bind " + local.toString(), err);
  }
  auto bound = net::localAddress(fd->get());
  if (!bound) return bound.error();
  return UdpSocket(std::move(*fd), *bound);
}

Result<UdpSocket> UdpSocket::bindInRange(const IpAddress& ip, uint16_t min_port, uint16_t max_port,
                                         const UdpSocketOptions& opts, uint32_t start_hint,
                                         bool even_only) {
  if (min_port == 0 || min_port > max_port) {
    return makeError(Error::Code::kInvalidArgument, "port range " + std::to_string(min_port) + "-" +
                                                        std::to_string(max_port) +
                                                        ": must be 1-65535 with min <= max");
  }
  auto fd = openSocket(ip.family(), opts);
  if (!fd) return fd.error();
  // A failed bind leaves the socket unbound, so one socket serves every attempt.
  const uint32_t size = uint32_t{max_port} - min_port + 1;
  const uint32_t first = start_hint % size;
  for (uint32_t i = 0; i < size; ++i) {
    const TransportAddress local{ip, static_cast<uint16_t>(min_port + (first + i) % size)};
    if (even_only && local.port % 2 != 0) continue;
    const int err = bindTo(fd->get(), local);
    if (err == EADDRINUSE) continue;
    if (err != 0) return ioError("bind " + local.toString(), err);
    auto bound = net::localAddress(fd->get());
    if (!bound) return bound.error();
    return UdpSocket(std::move(*fd), *bound);
  }
  return makeError(Error::Code::kExhausted,
                   std::string(even_only ? "no free even UDP port on " : "no free UDP port on ") +
                       ip.toString() + " in " + std::to_string(min_port) + "-" +
                       std::to_string(max_port));
}

}  // namespace kturn::net
