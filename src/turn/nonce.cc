#include "turn/nonce.h"

#include <cstring>

#include "common/crypto.h"

namespace kturn::turn {
namespace {

constexpr char kHex[] = "0123456789abcdef";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

NonceGenerator::NonceGenerator(std::span<const uint8_t, 32> key) {
  std::memcpy(key_.data(), key.data(), key_.size());
}

std::array<uint8_t, 12> NonceGenerator::mac(const IpAddress& client, uint32_t expires) const {
  uint8_t buf[4 + 1 + 16];
  buf[0] = static_cast<uint8_t>(expires >> 24);
  buf[1] = static_cast<uint8_t>(expires >> 16);
  buf[2] = static_cast<uint8_t>(expires >> 8);
  buf[3] = static_cast<uint8_t>(expires);
  buf[4] = static_cast<uint8_t>(client.family());
  std::memset(buf + 5, 0, 16);
  const auto ip = client.bytes();
  std::memcpy(buf + 5, ip.data(), ip.size());
  const auto digest = crypto::hmacSha1(key_, {{buf, sizeof buf}});
  std::array<uint8_t, 12> out;
  std::memcpy(out.data(), digest.data(), out.size());
  return out;
}

NonceGenerator::Nonce NonceGenerator::make(const TransportAddress& client,
                                           int64_t expires_unix) const {
  const auto expires = static_cast<uint32_t>(expires_unix);
  uint8_t raw[16];
  raw[0] = static_cast<uint8_t>(expires >> 24);
  raw[1] = static_cast<uint8_t>(expires >> 16);
  raw[2] = static_cast<uint8_t>(expires >> 8);
  raw[3] = static_cast<uint8_t>(expires);
  const auto m = mac(client.ip, expires);
  std::memcpy(raw + 4, m.data(), m.size());
  Nonce out;
  for (size_t i = 0; i < sizeof raw; ++i) {
    out[2 * i] = kHex[raw[i] >> 4];
    out[2 * i + 1] = kHex[raw[i] & 15];
  }
  return out;
}

NonceGenerator::Check NonceGenerator::check(std::string_view nonce, const TransportAddress& client,
                                            int64_t now_unix) const {
  if (nonce.size() != kSize) return Check::kInvalid;
  uint8_t raw[16];
  for (size_t i = 0; i < sizeof raw; ++i) {
    const int hi = hexValue(nonce[2 * i]);
    const int lo = hexValue(nonce[2 * i + 1]);
    if (hi < 0 || lo < 0) return Check::kInvalid;
    raw[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  const uint32_t expires =
      (uint32_t{raw[0]} << 24) | (uint32_t{raw[1]} << 16) | (uint32_t{raw[2]} << 8) | raw[3];
  const auto m = mac(client.ip, expires);
  if (!crypto::equalConstantTime(m, {raw + 4, 12})) return Check::kInvalid;
  return static_cast<int64_t>(expires) > now_unix ? Check::kValid : Check::kStale;
}

}  // namespace kturn::turn
