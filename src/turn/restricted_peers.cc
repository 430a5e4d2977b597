#include "turn/restricted_peers.h"

#include <array>

namespace kturn::turn {
namespace {

bool prefixMatch(const IpAddress& prefix, uint8_t length, const IpAddress& ip) {
  if (prefix.family() != ip.family()) return false;
  const auto a = prefix.bytes();
  const auto b = ip.bytes();
  const size_t full = length / 8;
  for (size_t i = 0; i < full; ++i) {
    if (a[i] != b[i]) return false;
  }
  const int rest = length % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

IpPrefix v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t length) {
  return {IpAddress::v4({a, b, c, d}), length};
}

IpPrefix v6(std::array<uint8_t, 16> bytes, uint8_t length) {
  return {IpAddress::v6(bytes), length};
}

const std::array<IpPrefix, 8> kRestrictedV4 = {
    v4(0, 0, 0, 0, 8),           // "this network", 0.0.0.0 reaches the local host
    v4(127, 0, 0, 0, 8),         // loopback
    v4(169, 254, 0, 0, 16),      // link-local, incl. the 169.254.169.254 metadata endpoint
    v4(192, 88, 99, 0, 24),      // 6to4 relay anycast
    v4(224, 0, 0, 0, 4),         // multicast
    v4(240, 0, 0, 0, 4),         // reserved
    v4(255, 255, 255, 255, 32),  // limited broadcast (inside 240/4, listed for the docs)
    v4(100, 100, 100, 200, 32),  // Alibaba Cloud metadata endpoint
};

const std::array<IpPrefix, 8> kRestrictedV6 = {
    v6({}, 128),                                                                  // :: unspecified
    v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128),                    // ::1 loopback
    v6({0xfe, 0x80}, 10),                                                         // link-local
    v6({0xff}, 8),                                                                // multicast
    v6({0x20, 0x02}, 16),                                                         // 6to4
    v6({0x20, 0x01, 0, 0}, 32),                                                   // Teredo
    v6({0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128),  // AWS metadata
    v6({0x01, 0x00}, 64),  // discard-only 100::/64
};

}  // namespace

bool IpPrefix::contains(const IpAddress& ip) const { return prefixMatch(prefix, length, ip); }

bool IpPrefix::covers(const IpAddress& other_prefix, uint8_t other_length) const {
  return other_length >= length && prefixMatch(prefix, length, other_prefix);
}

std::optional<IpPrefix> restrictedRangeOf(const IpAddress& ip) {
  if (ip.isV4()) {
    for (const IpPrefix& r : kRestrictedV4) {
      if (r.contains(ip)) return r;
    }
    return std::nullopt;
  }
  const auto b = ip.bytes();
  bool zero80 = true;
  for (size_t i = 0; i < 10; ++i) zero80 = zero80 && b[i] == 0;
  const bool mapped = zero80 && b[10] == 0xff && b[11] == 0xff;
  const bool compatible =
      zero80 && b[10] == 0 && b[11] == 0 && !(b[12] == 0 && b[13] == 0 && b[14] == 0);
  if (mapped || compatible) {
    // Judge the embedded IPv4 address; the whole ::ffff:0:0/96 or ::/96 block is then the range.
    const IpAddress embedded = IpAddress::v4({b[12], b[13], b[14], b[15]});
    if (restrictedRangeOf(embedded)) {
      std::array<uint8_t, 16> p{};
      if (mapped) p[10] = p[11] = 0xff;
      return IpPrefix{IpAddress::v6(p), 96};
    }
    return std::nullopt;
  }
  for (const IpPrefix& r : kRestrictedV6) {
    if (r.contains(ip)) return r;
  }
  return std::nullopt;
}

}  // namespace kturn::turn
