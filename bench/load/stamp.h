// The first 24 bytes of every relayed payload: who sent it, when, and its sequence number, so
// the generator measures loss and round-trip time of the echoed copy. Host byte order: the
// stamp never leaves the machine that wrote it.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace kturn::bench {

struct Stamp {
  static constexpr uint32_t kMagic = 0x4B544231;            // "KTB1"
  static constexpr uint64_t kMeasured = uint64_t{1} << 63;  // sent inside the measured window
  uint32_t magic = kMagic;
  uint32_t client = 0;
  uint64_t seq = 0;  // kMeasured | sequence number
  int64_t sent_ns = 0;
};
static_assert(sizeof(Stamp) == 24);

inline constexpr size_t kStampSize = sizeof(Stamp);

inline std::optional<Stamp> readStamp(std::span<const uint8_t> payload) {
  if (payload.size() < kStampSize) return std::nullopt;
  Stamp s;
  std::memcpy(&s, payload.data(), kStampSize);
  if (s.magic != Stamp::kMagic) return std::nullopt;
  return s;
}

}  // namespace kturn::bench
