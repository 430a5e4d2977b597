// The 16-byte address form of the BPF programs' maps (bpf/kturn_offload.h,
// bpf/kturn_relay_lookup.h): IPv6 as is, IPv4 as the IPv4-mapped ::ffff:a.b.c.d.
#pragma once

#include <cstdint>
#include <cstring>

#include "kturn/transport_address.h"

namespace kturn::xdp {

inline void putMappedAddress(uint8_t (&out)[16], const IpAddress& ip) {
  std::memset(out, 0, sizeof(out));
  const auto bytes = ip.bytes();
  if (ip.isV4()) {
    out[10] = out[11] = 0xff;
    std::memcpy(out + 12, bytes.data(), 4);
  } else {
    std::memcpy(out, bytes.data(), 16);
  }
}

}  // namespace kturn::xdp
