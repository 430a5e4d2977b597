#include "net/tcp_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

Error ioError(const std::string& what, int err) {
  return makeError(Error::Code::kIo, what + ": " + std::strerror(err));
}

// A listener on "::" is dual stack: an IPv4 client arrives as ::ffff:a.b.c.d. TURN must see
// and report it as the IPv4 client it is (XOR-MAPPED-ADDRESS, the default relay family); a
// stream needs no address to answer, so nothing is lost.
TransportAddress unmapped(const TransportAddress& address) {
  const auto b = address.ip.bytes();
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (address.ip.isV4() || !std::equal(b.begin(), b.begin() + 12, kMappedPrefix)) return address;
  return TransportAddress{IpAddress::v4(std::array<uint8_t, 4>{b[12], b[13], b[14], b[15]}),
                          address.port};
}

bool setOption(int fd, int level, int name, int value) {
  return ::setsockopt(fd, level, name, &value, sizeof value) == 0;
}

}  // namespace

Result<FileDescriptor> listenTcp(const TransportAddress& local, const TcpListenOptions& opts) {
  const bool v6 = local.family() == AddressFamily::kIPv6;
  FileDescriptor fd(
      ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ioError("socket", errno);
  if (!setOption(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1)) return ioError("SO_REUSEADDR", errno);
  if (opts.reuse_port && !setOption(fd.get(), SOL_SOCKET, SO_REUSEPORT, 1)) {
    return ioError("SO_REUSEPORT", errno);
  }
  if (v6 && !setOption(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, 0)) {
    return ioError("IPV6_V6ONLY", errno);
  }
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(local, ss);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    return ioError("bind " + local.toString() + "/tcp", errno);
  }
  if (::listen(fd.get(), opts.backlog) != 0) return ioError("listen", errno);
  return fd;
}

Result<std::optional<Accepted>> acceptTcp(int listening_fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  const int fd =
      ::accept4(listening_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EINTR ||
        err == EPROTO || err == EPERM) {
      return std::optional<Accepted>{};
    }
    return ioError("accept", err);
  }
  Accepted a{
      FileDescriptor(fd), unmapped(fromSockaddr(reinterpret_cast<const sockaddr*>(&ss))), {}};
  setOption(fd, IPPROTO_TCP, TCP_NODELAY, 1);  // media frames must not wait for Nagle
  auto local = localAddress(fd);
  if (!local) return local.error();
  a.local = unmapped(*local);
  return std::optional<Accepted>(std::move(a));
}

Result<FileDescriptor> connectTcpFrom(const TransportAddress& local,
                                      const TransportAddress& remote) {
  FileDescriptor fd(::socket(local.family() == AddressFamily::kIPv6 ? AF_INET6 : AF_INET,
                             SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ioError("socket", errno);
  if (!setOption(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1) ||
      !setOption(fd.get(), SOL_SOCKET, SO_REUSEPORT, 1)) {
    return ioError("SO_REUSEADDR/SO_REUSEPORT", errno);
  }
  setOption(fd.get(), IPPROTO_TCP, TCP_NODELAY, 1);
  sockaddr_storage ss;
  socklen_t len = toSockaddr(local, ss);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    return ioError("bind " + local.toString() + "/tcp", errno);
  }
  len = toSockaddr(remote, ss);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0 &&
      errno != EINPROGRESS) {
    return ioError("connect " + remote.toString(), errno);
  }
  return fd;
}

int connectResult(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace kturn::net
