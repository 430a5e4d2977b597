// Framing of TURN over a byte stream (TCP, TLS): RFC 8656 §3.1 and RFC 8489 §6.2.2. A stream
// carries STUN messages (their length is in the header) and ChannelData messages (padded to a
// multiple of four bytes on streams, RFC 8656 §12.5), back to back; RFC 7983's first-byte rule
// tells them apart. Sans-I/O: the caller feeds whatever it has buffered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kturn::stun {

struct StreamFrame {
  enum class Kind : uint8_t {
    kIncomplete,   // not enough bytes yet to know or to hold the whole frame
    kStun,         // a STUN message of `message_size` bytes
    kChannelData,  // a ChannelData message: `message_size` bytes, then padding
    kInvalid,      // neither: the stream is out of sync and cannot recover
  };
  Kind kind = Kind::kIncomplete;
  size_t message_size = 0;  // the message, without padding
  size_t frame_size = 0;    // bytes to consume: the message and its padding
};

// Looks at the start of `buffered`. Complete frames come back with both sizes set; kIncomplete
// means "read more" (its sizes, when already known, say how much the frame needs).
StreamFrame nextStreamFrame(std::span<const uint8_t> buffered);

}  // namespace kturn::stun
