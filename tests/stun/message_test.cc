#include "stun/message.h"

#include <gtest/gtest.h>

#include <vector>

#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "stun/demux.h"
#include "stun/integrity.h"
#include "stun/message_builder.h"

namespace kturn::stun {
namespace {

using Bytes = std::vector<uint8_t>;
const TransactionId kTxid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

Bytes build(auto&& fill) {
  uint8_t buf[512];
  MessageBuilder b(buf, Method::kAllocate, MessageClass::kRequest, kTxid);
  fill(b);
  auto out = b.finish();
  EXPECT_TRUE(out);
  return Bytes(out->begin(), out->end());
}

TEST(MessageType, EncodesAndDecodesEveryMethodAndClass) {
  for (uint16_t method : {0x001, 0x003, 0x004, 0x006, 0x007, 0x008, 0x009, 0x00a, 0xfff}) {
    for (auto cls : {MessageClass::kRequest, MessageClass::kIndication,
                     MessageClass::kSuccessResponse, MessageClass::kErrorResponse}) {
      const uint16_t type = encodeMessageType(method, cls);
      EXPECT_EQ(type & 0xC000, 0);
      EXPECT_EQ(decodeMethod(type), method);
      EXPECT_EQ(decodeClass(type), cls);
    }
  }
  // RFC 8656 §17: Allocate error response is 0x0113, Data indication 0x0017.
  EXPECT_EQ(encodeMessageType(0x003, MessageClass::kErrorResponse), 0x0113);
  EXPECT_EQ(encodeMessageType(0x007, MessageClass::kIndication), 0x0017);
  EXPECT_EQ(encodeMessageType(0x001, MessageClass::kSuccessResponse), 0x0101);
}

TEST(MessageView, RejectsMalformedHeaders) {
  const Bytes good = build([](MessageBuilder& b) { b.addUint32(attr::kLifetime, 600); });
  ASSERT_TRUE(MessageView::parse(good));

  EXPECT_FALSE(MessageView::parse(std::span(good).first(19)));  // short header
  Bytes bad = good;
  bad[0] |= 0x80;  // top bits
  EXPECT_FALSE(MessageView::parse(bad));
  bad = good;
  bad[4] = 0;  // cookie
  EXPECT_FALSE(MessageView::parse(bad));
  bad = good;
  bad[3] += 1;  // length not a multiple of 4
  EXPECT_FALSE(MessageView::parse(bad));
  bad = good;
  bad.push_back(0);  // datagram longer than the length field
  bad.push_back(0);
  bad.push_back(0);
  bad.push_back(0);
  EXPECT_FALSE(MessageView::parse(bad));
}

TEST(MessageView, RejectsAttributeOverrunningTheMessage) {
  Bytes m = build([](MessageBuilder& b) { b.addUint32(attr::kLifetime, 600); });
  m[23] = 200;  // LIFETIME's length now runs past the end
  auto r = MessageView::parse(m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Error::Code::kMalformed);
}

TEST(MessageView, IgnoresAttributesAfterIntegrityExceptFingerprint) {
  uint8_t key[] = {1, 2, 3};
  Bytes m = build([&](MessageBuilder& b) {
    b.addString(attr::kUsername, "u").addMessageIntegrity(key).addString(attr::kRealm, "r");
  });
  auto v = MessageView::parse(m);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->has(attr::kUsername));
  EXPECT_TRUE(v->has(attr::kMessageIntegrity));
  EXPECT_FALSE(v->has(attr::kRealm));
}

TEST(MessageView, RejectsAttributesAfterFingerprint) {
  Bytes m = build([](MessageBuilder& b) { b.addFingerprint().addUint32(attr::kLifetime, 1); });
  EXPECT_FALSE(MessageView::parse(m));
}

TEST(MessageView, RejectsTooManyAttributes) {
  Bytes m = build([](MessageBuilder& b) {
    for (size_t i = 0; i <= MessageView::kMaxAttributes; ++i) b.addUint32(attr::kLifetime, 1);
  });
  auto r = MessageView::parse(m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Error::Code::kTooLong);
}

TEST(MessageBuilder, ReportsOverflowInsteadOfWritingPastTheBuffer) {
  uint8_t buf[32];
  MessageBuilder b(buf, Method::kBinding, MessageClass::kRequest, kTxid);
  b.addString(attr::kSoftware, "this does not fit in twelve bytes");
  EXPECT_FALSE(b.ok());
  EXPECT_FALSE(b.finish());
}

TEST(MessageBuilder, Sha256IntegrityVerifies) {
  const IntegrityKey key = longTermKey("user", "realm", "pass", PasswordAlgorithm::kSha256);
  EXPECT_EQ(key.size, 32);
  Bytes m = build([&](MessageBuilder& b) {
    b.addString(attr::kUsername, "user").addMessageIntegritySha256(key.span()).addFingerprint();
  });
  auto v = MessageView::parse(m);
  ASSERT_TRUE(v);
  EXPECT_EQ(checkMessageIntegrity(*v, key.span()), IntegrityCheck::kValid);
  EXPECT_EQ(checkFingerprint(*v), IntegrityCheck::kValid);
}

TEST(Attributes, TurnAttributesRoundTrip) {
  const auto peer = *TransportAddress::parse("[2001:db8::7]:5000");
  const uint16_t unknown[] = {0x0031, 0x7fff};
  Bytes m = build([&](MessageBuilder& b) {
    const uint8_t transport[] = {17, 0, 0, 0};
    const uint8_t channel[] = {0x40, 0x01, 0, 0};
    const uint8_t family[] = {0x02, 0, 0, 0};
    const uint8_t even_port[] = {0x80};
    b.add(attr::kRequestedTransport, transport)
        .add(attr::kChannelNumber, channel)
        .add(attr::kRequestedAddressFamily, family)
        .add(attr::kEvenPort, even_port)
        .addXorAddress(attr::kXorPeerAddress, peer)
        .addErrorCode(error::kPeerAddressFamilyMismatch)
        .addUnknownAttributes(unknown);
  });
  auto v = MessageView::parse(m);
  ASSERT_TRUE(v);
  EXPECT_EQ(decodeRequestedTransport(*v->value(attr::kRequestedTransport)), 17);
  EXPECT_EQ(decodeChannelNumber(*v->value(attr::kChannelNumber)), 0x4001);
  EXPECT_EQ(decodeAddressFamily(*v->value(attr::kRequestedAddressFamily)), 0x02);
  EXPECT_EQ(decodeEvenPort(*v->value(attr::kEvenPort)), true);
  EXPECT_EQ(decodeXorAddress(*v->value(attr::kXorPeerAddress), v->xorPad()), peer);
  const auto ec = decodeErrorCode(*v->value(attr::kErrorCode));
  ASSERT_TRUE(ec);
  EXPECT_EQ(ec->code, 443);
  EXPECT_EQ(ec->reason, "Peer Address Family Mismatch");
  EXPECT_EQ(v->value(attr::kUnknownAttributes)->size(), 4u);
}

TEST(Attributes, MalformedValuesDecodeToNothing) {
  const uint8_t three[] = {1, 2, 3};
  const uint8_t bad_family[] = {0, 0x03, 0, 0, 1, 2, 3, 4};
  const uint8_t short_v6[] = {0, 0x02, 0, 0, 1, 2, 3, 4};
  const std::array<uint8_t, 16> pad{};
  EXPECT_FALSE(decodeUint32(three));
  EXPECT_FALSE(decodeRequestedTransport(three));
  EXPECT_FALSE(decodeChannelNumber(three));
  EXPECT_FALSE(decodeXorAddress(bad_family, pad));
  EXPECT_FALSE(decodeXorAddress(short_v6, pad));
  EXPECT_FALSE(decodeErrorCode(three));
  EXPECT_FALSE(decodeEvenPort(three));
}

TEST(ChannelData, ParsesAndRejects) {
  const uint8_t ok[] = {0x40, 0x00, 0x00, 0x03, 'a', 'b', 'c', 0x00};  // padded
  auto v = parseChannelData(ok);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->channel, 0x4000);
  EXPECT_EQ(v->data.size(), 3u);
  EXPECT_EQ(channelDataFrameSize(ok), 8u);

  const uint8_t too_long[] = {0x40, 0x00, 0x00, 0x09, 'a'};
  EXPECT_FALSE(parseChannelData(too_long));
  const uint8_t bad_channel[] = {0x80, 0x00, 0x00, 0x00};
  EXPECT_FALSE(parseChannelData(bad_channel));
  const uint8_t short_header[] = {0x40, 0x00};
  EXPECT_FALSE(parseChannelData(short_header));
}

TEST(Demux, ClassifiesByFirstByteAsRfc7983) {
  EXPECT_EQ(classifyPacket(0x00), PacketKind::kStun);
  EXPECT_EQ(classifyPacket(0x03), PacketKind::kStun);
  EXPECT_EQ(classifyPacket(0x10), PacketKind::kZrtp);
  EXPECT_EQ(classifyPacket(0x16), PacketKind::kDtls);
  EXPECT_EQ(classifyPacket(0x40), PacketKind::kChannelData);
  EXPECT_EQ(classifyPacket(0x4f), PacketKind::kChannelData);
  EXPECT_EQ(classifyPacket(0x80), PacketKind::kRtp);
  EXPECT_EQ(classifyPacket(0x50), PacketKind::kUnknown);
  EXPECT_EQ(classifyPacket(0xff), PacketKind::kUnknown);
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  const std::string_view s = "123456789";
  EXPECT_EQ(crc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xCBF43926u);
}

}  // namespace
}  // namespace kturn::stun
