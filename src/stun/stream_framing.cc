#include "stun/stream_framing.h"

#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/constants.h"

namespace kturn::stun {

StreamFrame nextStreamFrame(std::span<const uint8_t> buffered) {
  StreamFrame f;
  if (buffered.empty()) return f;
  const uint8_t first = buffered[0];
  if (first <= 3) {  // STUN: the two most significant bits are zero
    if (buffered.size() < 8) return f;
    const size_t length = load16(buffered.data() + 2);
    if (load32(buffered.data() + 4) != kMagicCookie || length % 4 != 0) {
      f.kind = StreamFrame::Kind::kInvalid;
      return f;
    }
    f.message_size = f.frame_size = kHeaderSize + length;
    if (buffered.size() >= f.frame_size) f.kind = StreamFrame::Kind::kStun;
    return f;
  }
  if (isChannelDataByte(first)) {
    if (buffered.size() < kChannelDataHeaderSize) return f;
    const size_t length = load16(buffered.data() + 2);
    f.message_size = kChannelDataHeaderSize + length;
    f.frame_size = kChannelDataHeaderSize + ((length + 3) & ~size_t{3});
    if (buffered.size() >= f.frame_size) f.kind = StreamFrame::Kind::kChannelData;
    return f;
  }
  f.kind = StreamFrame::Kind::kInvalid;
  return f;
}

}  // namespace kturn::stun
