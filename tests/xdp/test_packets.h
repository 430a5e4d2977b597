// Ethernet/IPv4/IPv6/UDP frames for the eBPF fast path's tests, with every checksum computed
// from scratch (RFC 768, RFC 791, RFC 8200 §8.1), so that what the program computes
// incrementally is compared against an independent result.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kturn_offload.h"

namespace kturn::xdp::testing {

using Mac = std::array<uint8_t, 6>;
using Bytes = std::vector<uint8_t>;

struct Endpoint {
  std::string ip;  // IPv4 or IPv6 text
  uint16_t port;

  bool v6() const { return ip.find(':') != std::string::npos; }
  // 16 bytes, IPv4 as IPv4-mapped (the ABI's form).
  std::array<uint8_t, 16> mapped() const {
    std::array<uint8_t, 16> out{};
    if (v6()) {
      inet_pton(AF_INET6, ip.c_str(), out.data());
    } else {
      out[10] = out[11] = 0xff;
      inet_pton(AF_INET, ip.c_str(), out.data() + 12);
    }
    return out;
  }
};

struct FrameOptions {
  uint8_t ttl = 64;
  uint8_t tos = 0;
  uint16_t ip_id = 0x1234;
  bool dont_fragment = true;
  bool zero_udp_checksum = false;  // IPv4 only: "no checksum"
};

inline void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

inline uint32_t sum16(std::span<const uint8_t> data, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < data.size(); i += 2) sum += (uint32_t{data[i]} << 8) | data[i + 1];
  if (data.size() % 2) sum += uint32_t{data.back()} << 8;
  return sum;
}

inline uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

inline Bytes udpFrame(const Mac& dst_mac, const Mac& src_mac, const Endpoint& src,
                      const Endpoint& dst, std::span<const uint8_t> payload,
                      const FrameOptions& o = {}) {
  const bool v6 = src.v6();
  const size_t ip_len = v6 ? 40 : 20;
  const size_t udp_len = 8 + payload.size();
  Bytes f(14 + ip_len + udp_len, 0);
  std::memcpy(f.data(), dst_mac.data(), 6);
  std::memcpy(f.data() + 6, src_mac.data(), 6);
  put16(f, 12, v6 ? 0x86DD : 0x0800);
  auto s = src.mapped(), d = dst.mapped();
  const size_t l3 = 14, l4 = 14 + ip_len;
  uint32_t pseudo = 0;
  if (v6) {
    f[l3] = 0x60 | (o.tos >> 4);
    f[l3 + 1] = static_cast<uint8_t>(o.tos << 4);
    put16(f, l3 + 4, static_cast<uint16_t>(udp_len));
    f[l3 + 6] = 17;
    f[l3 + 7] = o.ttl;
    std::memcpy(&f[l3 + 8], s.data(), 16);
    std::memcpy(&f[l3 + 24], d.data(), 16);
    pseudo = sum16(std::span(s)) + sum16(std::span(d)) + static_cast<uint32_t>(udp_len) + 17;
  } else {
    f[l3] = 0x45;
    f[l3 + 1] = o.tos;
    put16(f, l3 + 2, static_cast<uint16_t>(20 + udp_len));
    put16(f, l3 + 4, o.ip_id);
    put16(f, l3 + 6, o.dont_fragment ? 0x4000 : 0);
    f[l3 + 8] = o.ttl;
    f[l3 + 9] = 17;
    std::memcpy(&f[l3 + 12], s.data() + 12, 4);
    std::memcpy(&f[l3 + 16], d.data() + 12, 4);
    put16(f, l3 + 10, fold(sum16(std::span(f).subspan(l3, 20))));
    pseudo = sum16(std::span(s).subspan(12)) + sum16(std::span(d).subspan(12)) +
             static_cast<uint32_t>(udp_len) + 17;
  }
  put16(f, l4, src.port);
  put16(f, l4 + 2, dst.port);
  put16(f, l4 + 4, static_cast<uint16_t>(udp_len));
  if (!payload.empty()) std::memcpy(f.data() + l4 + 8, payload.data(), payload.size());
  if (!(o.zero_udp_checksum && !v6)) {
    uint16_t c = fold(sum16(std::span(f).subspan(l4), pseudo));
    put16(f, l4 + 6, c == 0 ? 0xFFFF : c);
  }
  return f;
}

// `n` bytes of data that differ from position to position.
inline Bytes data(size_t n, uint8_t seed = 0x5a) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

// RFC 8656 §12.4: channel number, length, data; no padding (UDP).
inline Bytes channelData(uint16_t channel, std::span<const uint8_t> payload, size_t padding = 0) {
  Bytes b(4 + payload.size() + padding, 0);
  put16(b, 0, channel);
  put16(b, 2, static_cast<uint16_t>(payload.size()));
  if (!payload.empty()) std::memcpy(b.data() + 4, payload.data(), payload.size());
  return b;
}

}  // namespace kturn::xdp::testing
