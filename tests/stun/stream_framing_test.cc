// Framing of TURN over TCP/TLS streams: STUN messages by their header length, ChannelData with
// its padding, partial frames, and bytes that are neither.
#include "stun/stream_framing.h"

#include <gtest/gtest.h>

#include <vector>

#include "stun/channel_data.h"
#include "stun/message_builder.h"

namespace kturn::stun {
namespace {

using Kind = StreamFrame::Kind;

std::vector<uint8_t> bindingRequest() {
  uint8_t buf[64];
  const TransactionId txid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  MessageBuilder b(buf, Method::kBinding, MessageClass::kRequest, txid);
  b.addFingerprint();
  const auto out = *b.finish();
  return {out.begin(), out.end()};
}

std::vector<uint8_t> channelData(uint16_t length) {
  std::vector<uint8_t> frame(kChannelDataHeaderSize + ((length + 3u) & ~3u), 0);
  writeChannelDataHeader(frame.data(), 0x4001, length);
  return frame;
}

TEST(StreamFraming, StunMessageByItsHeaderLength) {
  const auto m = bindingRequest();
  const StreamFrame f = nextStreamFrame(m);
  EXPECT_EQ(f.kind, Kind::kStun);
  EXPECT_EQ(f.frame_size, m.size());
  EXPECT_EQ(f.message_size, m.size());
}

TEST(StreamFraming, ChannelDataIsPaddedToFourBytes) {
  const auto frame = channelData(5);
  ASSERT_EQ(frame.size(), 12u);
  const StreamFrame f = nextStreamFrame(frame);
  EXPECT_EQ(f.kind, Kind::kChannelData);
  EXPECT_EQ(f.message_size, 9u);
  EXPECT_EQ(f.frame_size, 12u);
}

TEST(StreamFraming, PartialFramesAskForMore) {
  const auto m = bindingRequest();
  for (size_t n = 0; n < m.size(); ++n) {
    EXPECT_EQ(nextStreamFrame({m.data(), n}).kind, Kind::kIncomplete) << n;
  }
  const auto cd = channelData(5);
  // The message is complete at 9 bytes, but the frame includes the padding.
  EXPECT_EQ(nextStreamFrame({cd.data(), 9}).kind, Kind::kIncomplete);
  EXPECT_EQ(nextStreamFrame({cd.data(), 9}).frame_size, 12u);
}

TEST(StreamFraming, BackToBackFramesSplitAtTheirBoundaries) {
  std::vector<uint8_t> stream = channelData(3);
  const auto m = bindingRequest();
  stream.insert(stream.end(), m.begin(), m.end());
  const auto tail = channelData(100);
  stream.insert(stream.end(), tail.begin(), tail.end());
  std::vector<Kind> kinds;
  size_t offset = 0;
  while (offset < stream.size()) {
    const StreamFrame f = nextStreamFrame({stream.data() + offset, stream.size() - offset});
    ASSERT_NE(f.kind, Kind::kInvalid);
    ASSERT_NE(f.kind, Kind::kIncomplete);
    kinds.push_back(f.kind);
    offset += f.frame_size;
  }
  EXPECT_EQ(offset, stream.size());
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kChannelData, Kind::kStun, Kind::kChannelData}));
}

TEST(StreamFraming, OutOfSyncBytesAreInvalid) {
  const std::vector<uint8_t> tls_hello = {0x16, 0x03, 0x01, 0x00, 0x10};
  EXPECT_EQ(nextStreamFrame(tls_hello).kind, Kind::kInvalid);
  const std::vector<uint8_t> rtp = {0x80, 0x60, 0x00, 0x01};
  EXPECT_EQ(nextStreamFrame(rtp).kind, Kind::kInvalid);
  auto m = bindingRequest();
  m[4] ^= 0xFF;  // no magic cookie
  EXPECT_EQ(nextStreamFrame(m).kind, Kind::kInvalid);
  m = bindingRequest();
  m[3] = 0x05;  // length not a multiple of four
  EXPECT_EQ(nextStreamFrame(m).kind, Kind::kInvalid);
}

}  // namespace
}  // namespace kturn::stun
