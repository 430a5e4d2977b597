// ChannelData framing (RFC 8656 §12.4):
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |         Channel Number        |            Length             |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                       Application Data                        |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Over UDP the message need not be padded; over TCP/TLS it is padded to a multiple of four
// (RFC 8656 §12.5).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "kturn/result.h"
#include "stun/byte_order.h"

namespace kturn::stun {

inline constexpr size_t kChannelDataHeaderSize = 4;
// RFC 8656 §12 narrowed channels to 0x4000-0x4FFF so that ChannelData stays apart from
// DTLS/RTP in RFC 7983 demultiplexing. RFC 5766 allowed 0x4000-0x7FFF, and clients still use it
// (coturn's turnutils_uclient picks channels up to 0x7FFF); coturn and pion (STUNner) accept it,
// and so does kturn: a TURN listener receives only STUN and ChannelData, so there is nothing to
// confuse it with.
inline constexpr uint16_t kMinChannelNumber = 0x4000;
inline constexpr uint16_t kMaxChannelNumber = 0x7FFF;

// First byte 0x40-0x7F: a ChannelData message on a TURN listener.
constexpr bool isChannelDataByte(uint8_t first_byte) { return (first_byte & 0xC0) == 0x40; }

constexpr bool isValidChannelNumber(uint16_t n) {
  return n >= kMinChannelNumber && n <= kMaxChannelNumber;
}

struct ChannelDataView {
  uint16_t channel = 0;
  std::span<const uint8_t> data;
};

// Parses a ChannelData message. Trailing bytes beyond Length (padding) are allowed.
Result<ChannelDataView> parseChannelData(std::span<const uint8_t> bytes);

// Size of the ChannelData frame that starts `bytes` on a stream transport, padding included.
std::optional<size_t> channelDataFrameSize(std::span<const uint8_t> bytes);

// Writes the 4-byte header in front of `length` payload bytes at `at`.
inline void writeChannelDataHeader(uint8_t* at, uint16_t channel, uint16_t length) {
  store16(at, channel);
  store16(at + 2, length);
}

}  // namespace kturn::stun
