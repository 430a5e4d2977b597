// IP addresses, transport addresses and 5-tuples: the vocabulary of RFC 8656 §2.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kturn {

// Values are STUN's address family codes (RFC 8489 §14.1), so they go on the wire unchanged.
enum class AddressFamily : uint8_t { kIPv4 = 0x01, kIPv6 = 0x02 };

// An IPv4 or IPv6 address held in network byte order. A plain value: cheap to copy and compare.
class IpAddress {
 public:
  IpAddress() = default;  // 0.0.0.0

  static IpAddress v4(std::array<uint8_t, 4> bytes);
  static IpAddress v4(uint32_t host_order);
  static IpAddress v6(std::array<uint8_t, 16> bytes);
  static IpAddress fromBytes(AddressFamily family, std::span<const uint8_t> bytes);
  // Parses dotted-quad IPv4 or RFC 4291 IPv6 text; no brackets, no port.
  static std::optional<IpAddress> parse(std::string_view text);

  AddressFamily family() const { return family_; }
  bool isV4() const { return family_ == AddressFamily::kIPv4; }
  // 4 bytes for IPv4, 16 for IPv6, network order.
  std::span<const uint8_t> bytes() const { return {bytes_.data(), isV4() ? 4u : 16u}; }
  bool isUnspecified() const;
  bool isLoopback() const;  // 127.0.0.0/8 or ::1
  std::string toString() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  AddressFamily family_ = AddressFamily::kIPv4;
  std::array<uint8_t, 16> bytes_{};  // IPv4 uses the first four; the rest stay zero.
};

// An IP address and a port (RFC 8656 §2 "transport address").
struct TransportAddress {
  IpAddress ip;
  uint16_t port = 0;

  AddressFamily family() const { return ip.family(); }
  // "1.2.3.4:5" or "[::1]:5".
  std::string toString() const;
  // Accepts the forms toString() writes.
  static std::optional<TransportAddress> parse(std::string_view text);

  friend bool operator==(const TransportAddress&, const TransportAddress&) = default;
  friend auto operator<=>(const TransportAddress&, const TransportAddress&) = default;
};

// Values are the IANA protocol numbers, as carried by REQUESTED-TRANSPORT (RFC 8656 §18.7).
enum class TransportProtocol : uint8_t { kTcp = 6, kUdp = 17 };

// The client-side 5-tuple that identifies an allocation (RFC 8656 §2).
struct FiveTuple {
  TransportProtocol protocol = TransportProtocol::kUdp;
  TransportAddress client;
  TransportAddress server;

  friend bool operator==(const FiveTuple&, const FiveTuple&) = default;
};

// A 64-bit mix of an address, for hash tables on the data path (no allocation, no std::string).
inline uint64_t hashBytes(const void* data, size_t n, uint64_t seed) {
  // FNV-1a over the bytes followed by a murmur-style finaliser.
  uint64_t h = seed ^ 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

inline uint64_t hashValue(const IpAddress& ip, uint64_t seed = 0) {
  uint8_t buf[17];
  buf[0] = static_cast<uint8_t>(ip.family());
  const auto b = ip.bytes();
  std::memset(buf + 1, 0, 16);
  std::memcpy(buf + 1, b.data(), b.size());
  return hashBytes(buf, sizeof buf, seed);
}

inline uint64_t hashValue(const TransportAddress& a, uint64_t seed = 0) {
  uint8_t buf[19];
  buf[0] = static_cast<uint8_t>(a.ip.family());
  const auto b = a.ip.bytes();
  std::memset(buf + 1, 0, 16);
  std::memcpy(buf + 1, b.data(), b.size());
  buf[17] = static_cast<uint8_t>(a.port >> 8);
  buf[18] = static_cast<uint8_t>(a.port);
  return hashBytes(buf, sizeof buf, seed);
}

}  // namespace kturn

template <>
struct std::hash<kturn::IpAddress> {
  size_t operator()(const kturn::IpAddress& ip) const { return kturn::hashValue(ip); }
};

template <>
struct std::hash<kturn::TransportAddress> {
  size_t operator()(const kturn::TransportAddress& a) const { return kturn::hashValue(a); }
};

template <>
struct std::hash<kturn::FiveTuple> {
  size_t operator()(const kturn::FiveTuple& t) const {
    return kturn::hashValue(t.client,
                            kturn::hashValue(t.server, static_cast<uint64_t>(t.protocol)));
  }
};
