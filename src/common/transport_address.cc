#include "kturn/transport_address.h"

#include <arpa/inet.h>

#include "kturn/host_port.h"

namespace kturn {

IpAddress IpAddress::v4(std::array<uint8_t, 4> bytes) {
  IpAddress a;
  a.family_ = AddressFamily::kIPv4;
  std::memcpy(a.bytes_.data(), bytes.data(), 4);
  return a;
}

IpAddress IpAddress::v4(uint32_t host_order) {
  return v4({static_cast<uint8_t>(host_order >> 24), static_cast<uint8_t>(host_order >> 16),
             static_cast<uint8_t>(host_order >> 8), static_cast<uint8_t>(host_order)});
}

IpAddress IpAddress::v6(std::array<uint8_t, 16> bytes) {
  IpAddress a;
  a.family_ = AddressFamily::kIPv6;
  a.bytes_ = bytes;
  return a;
}

IpAddress IpAddress::fromBytes(AddressFamily family, std::span<const uint8_t> bytes) {
  IpAddress a;
  a.family_ = family;
  std::memcpy(a.bytes_.data(), bytes.data(), family == AddressFamily::kIPv4 ? 4 : 16);
  return a;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  char buf[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  if (inet_pton(AF_INET, buf, a.bytes_.data()) == 1) {
    a.family_ = AddressFamily::kIPv4;
    return a;
  }
  if (inet_pton(AF_INET6, buf, a.bytes_.data()) == 1) {
    a.family_ = AddressFamily::kIPv6;
    return a;
  }
  return std::nullopt;
}

bool IpAddress::isUnspecified() const {
  for (uint8_t b : bytes()) {
    if (b != 0) return false;
  }
  return true;
}

bool IpAddress::isLoopback() const {
  if (isV4()) return bytes_[0] == 127;
  for (size_t i = 0; i < 15; ++i) {
    if (bytes_[i] != 0) return false;
  }
  return bytes_[15] == 1;
}

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN];
  const int af = isV4() ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes_.data(), buf, sizeof buf) == nullptr) return "?";
  return buf;
}

std::string TransportAddress::toString() const {
  std::string out;
  out.reserve(48);
  if (!ip.isV4()) out.push_back('[');
  out.append(ip.toString());
  if (!ip.isV4()) out.push_back(']');
  out.push_back(':');
  out.append(std::to_string(port));
  return out;
}

std::optional<TransportAddress> TransportAddress::parse(std::string_view text) {
  const auto split = splitHostPort(text);
  if (!split || !split->port) return std::nullopt;
  const auto ip = IpAddress::parse(split->host);
  const auto port = parsePort(*split->port);
  if (!ip || !port) return std::nullopt;
  return TransportAddress{*ip, *port};
}

}  // namespace kturn
