// Fuzz target: ChannelData framing and first-byte demultiplexing (src/stun/channel_data.h,
// src/stun/demux.h). The input is parsed as one UDP datagram and, as on a stream transport, cut
// into consecutive frames by channelDataFrameSize() / messageSize().
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "fuzz_check.h"
#include "stun/channel_data.h"
#include "stun/demux.h"
#include "stun/message.h"

namespace {

using namespace kturn::stun;

void checkDatagram(std::span<const uint8_t> bytes) {
  auto cd = parseChannelData(bytes);
  if (!cd) return;
  FUZZ_CHECK(bytes.size() >= kChannelDataHeaderSize);
  FUZZ_CHECK(isValidChannelNumber(cd->channel));
  FUZZ_CHECK(isChannelDataByte(bytes[0]));
  FUZZ_CHECK(cd->channel == load16(bytes.data()));
  FUZZ_CHECK(cd->data.size() == load16(bytes.data() + 2));
  FUZZ_CHECK(cd->data.data() == bytes.data() + kChannelDataHeaderSize);
  FUZZ_CHECK(kChannelDataHeaderSize + cd->data.size() <= bytes.size());
  // Writing the header back reproduces it.
  uint8_t header[kChannelDataHeaderSize];
  writeChannelDataHeader(header, cd->channel, static_cast<uint16_t>(cd->data.size()));
  FUZZ_CHECK(load16(header) == cd->channel && load16(header + 2) == cd->data.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes{data, size};
  for (int b = 0; b < 256; b += 37) (void)classifyPacket(static_cast<uint8_t>(b));
  if (size > 0) {
    const PacketKind kind = classifyPacket(data[0]);
    // A TURN listener takes 0x40-0x7F as ChannelData: a superset of RFC 7983's 64-79.
    if (kind == PacketKind::kChannelData) FUZZ_CHECK(isChannelDataByte(data[0]));
    if (isChannelDataByte(data[0])) FUZZ_CHECK(kind != PacketKind::kStun);
  }
  checkDatagram(bytes);

  // Stream framing: consecutive frames, each ChannelData (padded) or STUN.
  size_t pos = 0;
  for (int frames = 0; pos < size && frames < 64; ++frames) {
    const auto rest = bytes.subspan(pos);
    std::optional<size_t> frame;
    if (isChannelDataByte(rest[0])) {
      frame = channelDataFrameSize(rest);
      if (frame) {
        FUZZ_CHECK(*frame % 4 == 0 && *frame >= kChannelDataHeaderSize);
        FUZZ_CHECK(*frame >= kChannelDataHeaderSize + load16(rest.data() + 2));
      }
    } else if (classifyPacket(rest[0]) == PacketKind::kStun) {
      frame = messageSize(rest);
      if (frame) {
        (void)MessageView::parse(rest.first(std::min(*frame, rest.size())));
      }
    }
    if (!frame || *frame > rest.size()) break;  // incomplete: a stream would wait for more
    checkDatagram(rest.first(*frame));
    pos += *frame;
  }
  return 0;
}
