// Demultiplexing by the first byte of a packet (RFC 7983 §7, as updated by RFC 8656 §12.7):
//
//                   +----------------+
//                   |        [0..3] -+--> forward to STUN
//                   |       [16..19] -+--> forward to ZRTP
//       packet -->  |       [20..63] -+--> forward to DTLS
//                   |       [64..79] -+--> forward to TURN Channel
//                   |     [128..191] -+--> forward to RTP/RTCP
//                   +----------------+
#pragma once

#include <cstdint>

namespace kturn::stun {

enum class PacketKind : uint8_t { kStun, kZrtp, kDtls, kChannelData, kRtp, kUnknown };

constexpr PacketKind classifyPacket(uint8_t first_byte) {
  if (first_byte <= 3) return PacketKind::kStun;
  if (first_byte >= 16 && first_byte <= 19) return PacketKind::kZrtp;
  if (first_byte >= 20 && first_byte <= 63) return PacketKind::kDtls;
  if (first_byte >= 64 && first_byte <= 79) return PacketKind::kChannelData;
  if (first_byte >= 128 && first_byte <= 191) return PacketKind::kRtp;
  return PacketKind::kUnknown;
}

}  // namespace kturn::stun
