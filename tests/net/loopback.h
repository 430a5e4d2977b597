// Helpers for tests/net: real UDP sockets on 127.0.0.1 and ::1 only.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kturn/transport_address.h"
#include "net/sockaddr.h"
#include "net/udp_socket.h"

namespace kturn::net::testing {

inline IpAddress loopback(AddressFamily family) {
  return *IpAddress::parse(family == AddressFamily::kIPv4 ? "127.0.0.1" : "::1");
}

// A socket on an ephemeral loopback port; fails the test if binding fails.
inline UdpSocket bindLoopback(AddressFamily family, const UdpSocketOptions& opts = {}) {
  auto socket = UdpSocket::bind({loopback(family), 0}, opts);
  EXPECT_TRUE(socket.has_value()) << (socket ? "" : socket.error().message);
  return std::move(*socket);
}

inline std::span<const uint8_t> bytesOf(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

inline std::string_view textOf(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// One plain sendto(2), independent of the code under test.
inline bool sendTo(int fd, const TransportAddress& to, std::span<const uint8_t> data) {
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(to, ss);
  return ::sendto(fd, data.data(), data.size(), 0, reinterpret_cast<const sockaddr*>(&ss), len) ==
         static_cast<ssize_t>(data.size());
}

inline bool waitReadable(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

}  // namespace kturn::net::testing
