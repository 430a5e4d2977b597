#include "net/sockaddr.h"

#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace kturn::net {

socklen_t toSockaddr(const TransportAddress& address, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  const auto bytes = address.ip.bytes();
  if (address.ip.isV4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(address.port);
    std::memcpy(&sin->sin_addr, bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(address.port);
  std::memcpy(&sin6->sin6_addr, bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

TransportAddress fromSockaddr(const sockaddr* sa) {
  TransportAddress out;
  if (sa == nullptr) return out;
  // memcpy rather than a cast: `sa` may point into a byte buffer (a cmsg, a recvmmsg name area)
  // that is not aligned for the larger structure.
  if (sa->sa_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, sa, sizeof sin);
    std::array<uint8_t, 4> ip;
    std::memcpy(ip.data(), &sin.sin_addr, 4);
    out.ip = IpAddress::v4(ip);
    out.port = ntohs(sin.sin_port);
  } else if (sa->sa_family == AF_INET6) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, sa, sizeof sin6);
    std::array<uint8_t, 16> ip;
    std::memcpy(ip.data(), &sin6.sin6_addr, 16);
    out.ip = IpAddress::v6(ip);
    out.port = ntohs(sin6.sin6_port);
  }
  return out;
}

Result<TransportAddress> localAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return makeError(Error::Code::kIo, std::string("getsockname: ") + std::strerror(errno));
  }
  return fromSockaddr(reinterpret_cast<const sockaddr*>(&ss));
}

}  // namespace kturn::net
