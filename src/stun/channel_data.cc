#include "stun/channel_data.h"

namespace kturn::stun {

Result<ChannelDataView> parseChannelData(std::span<const uint8_t> bytes) {
  using enum Error::Code;
  if (bytes.size() < kChannelDataHeaderSize) return makeError(kTooShort, "short ChannelData");
  const uint16_t channel = load16(bytes.data());
  if (!isValidChannelNumber(channel)) return makeError(kMalformed, "channel number out of range");
  const size_t length = load16(bytes.data() + 2);
  if (length > bytes.size() - kChannelDataHeaderSize) {
    return makeError(kMalformed, "ChannelData length exceeds datagram");
  }
  return ChannelDataView{channel, bytes.subspan(kChannelDataHeaderSize, length)};
}

std::optional<size_t> channelDataFrameSize(std::span<const uint8_t> bytes) {
  if (bytes.size() < kChannelDataHeaderSize) return std::nullopt;
  const size_t length = load16(bytes.data() + 2);
  return kChannelDataHeaderSize + ((length + 3) & ~size_t{3});
}

}  // namespace kturn::stun
